package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// Named versions: a commit names a table version with an id, a message and
// an author; a tag names a version with a name of the user's. Both are
// replicated keys of the table (t<id>n<kind><name>), so every server of a
// location sees them, DropTable removes them, and VACUUM keeps the
// versions they name (and so, the oldest retained version being the
// horizon, every row those versions read). docs/versioning.md.

const tagRef = 'n'

// RefKind says what a named version is.
type RefKind byte

const (
	// RefCommit is a commit: its name is its id.
	RefCommit RefKind = 'c'
	// RefTag is a tag.
	RefTag RefKind = 't'
)

// Ref is a named version of a table.
type Ref struct {
	Kind    RefKind
	Name    string // the commit id, the tag's or the branch's name
	Version uint64
	// Table is the table the version is of: 0 for main (the table
	// itself), a branch's own table ID otherwise; Branch is then that
	// branch's name. For a branch, Table is its own table, Version the
	// version it forked at and Branch the branch it forked from.
	Table  uint64 `json:",omitempty"`
	Branch string `json:",omitempty"`
	// Base (a branch) is the layers its view reads under its own rows.
	Base []Layer `json:",omitempty"`
	// Commit is the id of the commit a tag or a branch was made from, if
	// any.
	Commit string `json:",omitempty"`
	// Parents (a commit) are the commits it follows: the previous one of
	// its branch, and for a merge the one merged in.
	Parents []string `json:",omitempty"`
	// Added and Deleted (a commit) count the rows its versions since its
	// first parent added and deleted (as their records tell while
	// retained).
	Added   int64  `json:",omitempty"`
	Deleted int64  `json:",omitempty"`
	Message string `json:",omitempty"`
	Author  string `json:",omitempty"`
	Time    time.Time
}

// BranchName returns the name of the branch the version r names is on.
func (r *Ref) BranchName() string {
	if r.Kind == RefBranch {
		return r.Name
	}
	if r.Branch == "" {
		return MainBranch
	}
	return r.Branch
}

func refKey(table uint64, kind RefKind, name string) []byte {
	k := append(binary.BigEndian.AppendUint64([]byte{'t'}, table), tagRef, byte(kind))
	return append(k, name...)
}

// maxRefName bounds a tag's name, as PostgreSQL bounds identifiers.
const maxRefName = 63

// CommitVersion names the version of table t (of its branch, when t is a
// branch's) that txn reads as a commit with message, by author, and
// returns its id: 12 hexadecimal digits of a hash of the table, the
// version, the time and the server. A transaction that wrote to t has no
// version of its writes yet: commit it first.
func (txn *Txn) CommitVersion(t *TableDesc, message, author string) (string, error) {
	return txn.commitVersion(t, message, author, nil)
}

// commitVersion is CommitVersion; merged, when set, is the id of a commit
// merged in, the commit's second parent.
func (txn *Txn) commitVersion(t *TableDesc, message, author string, merged *string) (string, error) {
	if err := txn.check(); err != nil {
		return "", err
	}
	if txn.wrote(t) {
		return "", pgerror.Newf(pgerror.ObjectNotInPrerequisiteState, "table %q has writes of this transaction", t.Name).
			WithHint("Commit the transaction first; deeplake_commit names a version that exists.")
	}
	v, err := txn.namedVersion(t)
	if err != nil {
		return "", err
	}
	// The parent is read and the commit stored under nameMu, its time
	// taken there too, so that of two commits named at one version the
	// later follows the earlier, and the log reaches both.
	txn.db.nameMu.Lock()
	defer txn.db.nameMu.Unlock()
	now := time.Now().UTC()
	h := sha256.New()
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], t.ID)
	binary.BigEndian.PutUint64(buf[8:], v)
	h.Write(buf[:])
	h.Write([]byte(now.Format(time.RFC3339Nano)))
	h.Write([]byte(txn.db.node))
	id := hex.EncodeToString(h.Sum(nil))[:12]
	ref := Ref{Kind: RefCommit, Name: id, Version: v, Message: message, Author: author, Time: now}
	if t.Branch != "" {
		ref.Table, ref.Branch = t.ID, t.Branch
	}
	p := txn.db.parentCommit(t, v)
	switch {
	case merged != nil:
		// A merge: its first parent may be none, its second is the
		// commit merged in.
		ref.Parents = []string{p, *merged}
	case p != "":
		ref.Parents = []string{p}
	}
	if ref.Added, ref.Deleted, err = txn.db.changesSince(t, p, v); err != nil {
		return "", err
	}
	if err := txn.db.putRef(t, &ref, false); err != nil {
		return "", err
	}
	return id, nil
}

// changesSince sums the rows the write versions of view t's own table
// added and deleted after commit parent (from its first version when
// parent is of another table) up to v.
func (db *DB) changesSince(t *TableDesc, parent string, v uint64) (added, deleted int64, err error) {
	from := uint64(0)
	if parent != "" {
		if r, ok, err := db.getRef(t, RefCommit, parent); err != nil {
			return 0, 0, err
		} else if ok && r.tableID(t) == t.ID {
			from = r.Version
		}
	}
	vs, err := db.tableVersions(t)
	if err != nil {
		return 0, 0, err
	}
	for _, vi := range vs {
		if vi.Version > from && vi.Version <= v && vi.Op == OpName(opWrite) {
			added += vi.Added
			deleted += vi.Deleted
		}
	}
	return added, deleted, nil
}

// Log returns the commits view t reaches, newest first: the latest commit
// of its table at or before the version the txn reads of it (for a branch
// without one, the commit it forked from), and their ancestors through
// their parents.
func (txn *Txn) Log(t *TableDesc) ([]Ref, error) {
	v, err := txn.readVersion(t)
	if err != nil {
		return nil, err
	}
	refs, err := txn.db.Refs(t)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*Ref)
	for i := range refs {
		if refs[i].Kind == RefCommit {
			byID[refs[i].Name] = &refs[i]
		}
	}
	start := txn.db.parentCommit(t, v)
	var out []Ref
	seen := make(map[string]bool)
	for queue := []string{start}; len(queue) > 0; queue = queue[1:] {
		id := queue[0]
		r, ok := byID[id]
		if id == "" || seen[id] || !ok {
			continue
		}
		seen[id] = true
		out = append(out, *r)
		queue = append(queue, r.Parents...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

// parentCommit returns the commit a new commit of version v of view t
// follows: the branch's latest commit at or before v, else the commit the
// branch forked from.
func (db *DB) parentCommit(t *TableDesc, v uint64) string {
	if c := db.commitAt(t, v); c != "" {
		return c
	}
	if t.Branch == "" {
		return ""
	}
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	if b, ok := db.branches[t.Root][t.Branch]; ok && b.ref.Table == t.ID {
		return b.ref.Commit
	}
	return ""
}

// namedVersion returns the version of t that txn reads, for a name to
// name: a table (or branch) without a version yet gets its first, empty,
// as an empty version cannot be read otherwise (AsOf 0 is the head).
func (txn *Txn) namedVersion(t *TableDesc) (uint64, error) {
	v, err := txn.readVersion(t)
	if err != nil || v > 0 {
		return v, err
	}
	db := txn.db
	for attempt := 0; ; attempt++ {
		db.commitMu.Lock()
		err = db.firstVersionLocked(t)
		db.commitMu.Unlock()
		if !errors.Is(err, errRetry) || attempt == maxCommitRetries {
			break
		}
		if err = db.reloadMemory(); err != nil {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// firstVersionLocked commits version 1 of t, with no rows, if t has no
// version. A version 1 with no rows (made so, for another name) will do
// as well; one with rows is 40001. Callers hold commitMu.
func (db *DB) firstVersionLocked(t *TableDesc) error {
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	ts, ok := db.byID[t.ID]
	if !ok {
		return undefinedTable(t.Name)
	}
	if ts.head != 0 {
		var rec versionRecord
		v, closer, err := db.kv.Get(appendIDKey(nil, t.ID, tagVersion, 1))
		if err == nil {
			rec, err = decodeVersionRecord(v)
			closer.Close()
		}
		if err == nil && rec.Op == opWrite && rec.Added == 0 && rec.Deleted == 0 && !rec.Manifest {
			return nil
		}
		return pgerror.New(pgerror.SerializationFailure, "could not serialize access due to concurrent update").
			WithDetail("Table %q got its first version from another transaction.", t.Name)
	}
	rec := versionRecord{Time: db.now().UnixNano(), Op: opWrite}
	b := db.kv.NewBatch()
	defer b.Close()
	_ = b.Set(appendIDKey(nil, t.ID, tagVersion, 1), rec.appendBinary(nil), nil)
	if err := db.commitBatch(b); err != nil {
		return err
	}
	db.commitSeq++
	ts.setHead(1, db.commitSeq, db.minOpenSeq())
	return nil
}

// readVersion returns the version of t that txn reads.
func (txn *Txn) readVersion(t *TableDesc) (uint64, error) {
	if t.AsOf != 0 {
		return t.AsOf, nil
	}
	if err := txn.check(); err != nil {
		return 0, err
	}
	db := txn.db
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.catMu.RLock()
	ts, ok := db.byID[t.ID]
	db.catMu.RUnlock()
	if !ok {
		return 0, undefinedTable(t.Name)
	}
	return ts.visibleHeadAt(txn.beginSeq), nil
}

// Tag names version ref of table t (a commit id, a tag, a branch's head, a
// version number or a time; "" for the version of t txn reads) name. A
// tag or branch of that name is 42710.
func (txn *Txn) Tag(t *TableDesc, name, ref string) (Ref, error) {
	if err := txn.check(); err != nil {
		return Ref{}, err
	}
	if err := checkRefName("tag", name); err != nil {
		return Ref{}, err
	}
	view := View{Desc: t}
	if ref != "" {
		var err error
		if view, err = txn.ResolveView(t, ref); err != nil {
			return Ref{}, err
		}
	}
	tag := Ref{Kind: RefTag, Name: name, Version: view.AsOf, Commit: view.Ref.commitID()}
	if tag.Version == 0 {
		v, err := txn.namedVersion(view.Desc)
		if err != nil {
			return Ref{}, err
		}
		tag.Version = v
	}
	if tag.Commit == "" {
		tag.Commit = txn.db.commitAt(view.Desc, tag.Version)
	}
	if view.Desc.Branch != "" {
		tag.Table, tag.Branch = view.Desc.ID, view.Desc.Branch
	}
	tag.Time = time.Now().UTC()
	if err := txn.db.putRef(t, &tag, false); err != nil {
		return Ref{}, err
	}
	return tag, nil
}

// DropTag removes tag name of table t; a missing one is (false, nil) when
// ifExists and 42704 otherwise.
func (db *DB) DropTag(t *TableDesc, name string, ifExists bool) (bool, error) {
	return retryDDL(db, func() (bool, error) {
		key := refKey(rootOf(t), RefTag, name)
		_, closer, err := db.kv.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			if ifExists {
				return false, nil
			}
			return false, pgerror.Newf(pgerror.UndefinedObject, "tag %q of table %q does not exist", name, t.Name)
		}
		if err != nil {
			return false, ioErrorf(err, "reading tag %q", name)
		}
		closer.Close()
		b := db.kv.NewBatch()
		defer b.Close()
		_ = b.Delete(key, nil)
		if err := db.commitDDL(b); err != nil {
			return false, err
		}
		return true, nil
	})
}

// putRef writes ref among the refs of the table t is a view of; an
// existing one of its name is 42710 unless replace.
func (db *DB) putRef(t *TableDesc, ref *Ref, replace bool) error {
	data, err := json.Marshal(ref)
	if err != nil {
		return assertf("encoding ref %q: %v", ref.Name, err)
	}
	root := rootOf(t)
	key := refKey(root, ref.Kind, ref.Name)
	_, err = retryDDL(db, func() (struct{}, error) {
		db.catMu.RLock()
		defer db.catMu.RUnlock()
		rs, live := db.byID[root]
		if _, ok := db.byID[t.ID]; !live || !ok {
			return struct{}{}, undefinedTable(t.Name)
		}
		if !replace {
			if ref.Kind == RefTag {
				if err := db.refNameFree(rs.desc, ref.Name); err != nil {
					return struct{}{}, err
				}
			} else {
				_, closer, err := db.kv.Get(key)
				if err == nil {
					closer.Close()
					return struct{}{}, pgerror.Newf(pgerror.DuplicateObject, "commit %q of table %q already exists", ref.Name, t.Name)
				}
				if !errors.Is(err, pebble.ErrNotFound) {
					return struct{}{}, ioErrorf(err, "reading ref %q", ref.Name)
				}
			}
		}
		b := db.kv.NewBatch()
		defer b.Close()
		_ = b.Set(key, data, nil)
		return struct{}{}, db.commitDDL(b)
	})
	return err
}

// Refs lists the named versions of table t (of the table t is a branch
// of): commits (oldest first), then tags and branches (by kind, then
// name).
func (db *DB) Refs(t *TableDesc) ([]Ref, error) {
	return db.refsOf(rootOf(t))
}

func (db *DB) refsOf(root uint64) ([]Ref, error) {
	lo := append(binary.BigEndian.AppendUint64([]byte{'t'}, root), tagRef)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, ioErrorf(err, "reading refs")
	}
	defer it.Close()
	var commits, others []Ref
	for it.First(); it.Valid(); it.Next() {
		var r Ref
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return nil, corruptionf("ref %q: %v", it.Key(), err)
		}
		if r.Kind == RefCommit {
			commits = append(commits, r)
		} else {
			others = append(others, r)
		}
	}
	if err := it.Error(); err != nil {
		return nil, ioErrorf(err, "reading refs")
	}
	sortRefsByTime(commits)
	return append(commits, others...), nil
}

func sortRefsByTime(rs []Ref) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].Time.Equal(rs[j].Time) {
			return rs[i].Time.Before(rs[j].Time)
		}
		return rs[i].Version < rs[j].Version
	})
}

// View is what a ref names: a table or one of its branches (Desc), read
// at version AsOf (0: its head, as the transaction reads it, and
// writable), and the named version Ref, if the ref named one.
type View struct {
	Desc *TableDesc
	AsOf uint64
	Ref  Ref
}

// ResolveView returns the view ref names for table t (a view of it): a
// branch (its head), a tag, a commit id (or a prefix of one at least 6
// digits long that only it has), a version number of t ("42" or "v42"),
// or a time (the version of t current then, as time travel reads it). A
// ref naming nothing is 42704.
func (txn *Txn) ResolveView(t *TableDesc, ref string) (View, error) {
	db := txn.db
	if ref == MainBranch {
		d, err := db.branch(t, MainBranch)
		return View{Desc: d, Ref: Ref{Kind: RefBranch, Name: MainBranch}}, err
	}
	r, err := txn.ResolveRef(t, ref)
	if err != nil {
		return View{}, err
	}
	if r.Kind == RefBranch {
		d, err := db.branch(t, r.Name)
		return View{Desc: d, Ref: r}, err
	}
	if r.Kind == 0 && r.Version == 0 && len(r.Base) > 0 {
		// A time before the branch's first version: its base then.
		d := layersView(t, r.Base)
		return View{Desc: d, AsOf: d.AsOf, Ref: r}, nil
	}
	if r.Kind == 0 {
		return View{Desc: t, AsOf: r.Version, Ref: r}, nil
	}
	db.catMu.RLock()
	d, ok := db.branchByTableLocked(rootOf(t), r.Table)
	db.catMu.RUnlock()
	if !ok {
		return View{}, pgerror.Newf(pgerror.UndefinedObject, "%q names a version of branch %q of table %q, which was dropped", ref, r.Branch, t.Name)
	}
	return View{Desc: d, AsOf: r.Version, Ref: r}, nil
}

// ResolveRef returns the named version ref names for table t, as
// ResolveView finds it; a version number or time gives a Ref of Kind 0
// with the version of t.
func (txn *Txn) ResolveRef(t *TableDesc, ref string) (Ref, error) {
	db := txn.db
	for _, kind := range []RefKind{RefBranch, RefTag, RefCommit} {
		if r, ok, err := db.getRef(t, kind, ref); err != nil || ok {
			return r, err
		}
	}
	if len(ref) >= 6 && len(ref) < 12 && isHex(ref) {
		refs, err := db.Refs(t)
		if err != nil {
			return Ref{}, err
		}
		var found []Ref
		for _, r := range refs {
			if r.Kind == RefCommit && strings.HasPrefix(r.Name, ref) {
				found = append(found, r)
			}
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return Ref{}, pgerror.Newf(pgerror.AmbiguousColumn, "commit id prefix %q of table %q is ambiguous", ref, t.Name)
		}
	}
	if n, err := strconv.ParseUint(strings.TrimPrefix(ref, "v"), 10, 64); err == nil && n > 0 {
		return Ref{Version: n}, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00", time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02"} {
		if at, err := time.Parse(layout, ref); err == nil {
			return txn.versionAt(t, at)
		}
	}
	return Ref{}, pgerror.Newf(pgerror.UndefinedObject, "%q names no branch, commit, tag, version or time of table %q", ref, t.Name)
}

// versionAt returns the version of t current at time at: the last one
// committed at or before it. On a branch older than at's first version,
// that is the version the branch forked at, which is its view then.
func (txn *Txn) versionAt(t *TableDesc, at time.Time) (Ref, error) {
	vs, err := txn.db.tableVersions(t)
	if err != nil {
		return Ref{}, err
	}
	var found uint64
	for _, v := range vs {
		if v.Time.After(at) {
			break
		}
		found = v.Version
	}
	if found == 0 && t.Branch != "" && len(t.Base) > 0 {
		// A branch made by then but not yet written reads its base.
		txn.db.catMu.RLock()
		b, ok := txn.db.branches[t.Root][t.Branch]
		txn.db.catMu.RUnlock()
		if ok && b.ref.Table == t.ID && !b.ref.Time.After(at) {
			return Ref{Time: at, Base: t.Base}, nil
		}
	}
	if found == 0 {
		return Ref{}, pgerror.Newf(pgerror.UndefinedObject, "table %q has no retained version at %s", t.Name, at.Format(time.RFC3339))
	}
	return Ref{Version: found, Time: at}, nil
}

func (db *DB) getRef(t *TableDesc, kind RefKind, name string) (Ref, bool, error) {
	var r Ref
	ok, err := db.getJSON(refKey(rootOf(t), kind, name), &r)
	return r, ok, err
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// namedVersions returns the versions of table t's own table (t's, or a
// branch's) that a commit, a tag or a branch's layer names.
func (db *DB) namedVersions(r pebble.Reader, t *TableDesc) (map[uint64]bool, error) {
	root := rootOf(t)
	lo := append(binary.BigEndian.AppendUint64([]byte{'t'}, root), tagRef)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, ioErrorf(err, "reading refs")
	}
	defer it.Close()
	named := make(map[uint64]bool)
	for it.First(); it.Valid(); it.Next() {
		var ref Ref
		if err := json.Unmarshal(it.Value(), &ref); err != nil {
			return nil, corruptionf("ref %q: %v", it.Key(), err)
		}
		switch ref.Kind {
		case RefBranch:
			for _, l := range ref.Base {
				if l.Table == t.ID {
					named[l.Version] = true
				}
			}
		default:
			if ref.tableID(t) == t.ID {
				named[ref.Version] = true
			}
		}
	}
	return named, it.Error()
}

// StreamSource returns the version of view t a stream reads (asOf, or
// the version txn reads) and the commit naming it: the latest commit of
// t's table if no write came after it, else one made now, by author, so
// that the stream can be read again (VERSION 'id') after the table moves
// on.
func (txn *Txn) StreamSource(t *TableDesc, asOf uint64, author string) (uint64, string, error) {
	if asOf != 0 {
		d := *t
		d.AsOf = asOf
		t = &d
	}
	if txn.wrote(t) {
		// Its own writes are no version: the stream reads them, unnamed.
		v, err := txn.readVersion(t)
		return v, "", err
	}
	v, err := txn.namedVersion(t)
	if err != nil {
		return 0, "", err
	}
	db := txn.db
	// The shards of one epoch start together: one of them commits.
	db.streamMu.Lock()
	defer db.streamMu.Unlock()
	// The branch's latest commit, or the one it forked from.
	c, lo := db.commitAt(t, v), uint64(0)
	if c != "" {
		lo = db.refVersion(t, c)
	} else {
		c = db.parentCommit(t, v)
	}
	if c != "" && !db.writesBetween(t, lo, v) {
		return v, c, nil
	}
	id, err := txn.CommitVersion(t, "read by a tensor stream", author)
	return v, id, err
}

package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	Name    string // the commit id, or the tag's name
	Version uint64
	// Commit is the id of the commit a tag was made from, if any.
	Commit  string `json:",omitempty"`
	Message string `json:",omitempty"`
	Author  string `json:",omitempty"`
	Time    time.Time
}

func refKey(table uint64, kind RefKind, name string) []byte {
	k := append(binary.BigEndian.AppendUint64([]byte{'t'}, table), tagRef, byte(kind))
	return append(k, name...)
}

// maxRefName bounds a tag's name, as PostgreSQL bounds identifiers.
const maxRefName = 63

// CommitVersion names the version of table t that txn reads as a commit
// with message, by author, and returns its id: 12 hexadecimal digits of a
// hash of the table, the version, the time and the server. A transaction
// that wrote to t has no version of its writes yet: commit it first.
func (txn *Txn) CommitVersion(t *TableDesc, message, author string) (string, error) {
	if err := txn.check(); err != nil {
		return "", err
	}
	if tt, ok := txn.tables[t.ID]; ok && (tt.inserted > 0 || len(tt.deleted) > 0 || len(tt.ownDel) > 0) {
		return "", pgerror.Newf(pgerror.ObjectNotInPrerequisiteState, "table %q has writes of this transaction", t.Name).
			WithHint("Commit the transaction first; deeplake_commit names a version that exists.")
	}
	v, err := txn.readVersion(t)
	if err != nil {
		return "", err
	}
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
	if err := txn.db.putRef(t, &ref, false); err != nil {
		return "", err
	}
	return id, nil
}

// readVersion returns the version of t that txn reads.
func (txn *Txn) readVersion(t *TableDesc) (uint64, error) {
	db := txn.db
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	ts, ok := db.byID[t.ID]
	if !ok {
		return 0, undefinedTable(t.Name)
	}
	return ts.visibleHeadAt(txn.beginSeq), nil
}

// Tag names version ref of table t (a commit id, a tag, a version number
// or a time; "" for the version txn reads) name. A tag of that name is
// 42710.
func (txn *Txn) Tag(t *TableDesc, name, ref string) (Ref, error) {
	if err := txn.check(); err != nil {
		return Ref{}, err
	}
	if name == "" || len(name) > maxRefName || strings.ContainsAny(name, "\x00@:") {
		return Ref{}, pgerror.Newf(pgerror.InvalidParameterValue, "invalid tag name %q", name).
			WithDetail("A tag's name has 1 to %d characters, none of them @, : or NUL.", maxRefName)
	}
	var tag Ref
	if ref == "" {
		v, err := txn.readVersion(t)
		if err != nil {
			return Ref{}, err
		}
		tag.Version = v
	} else {
		r, err := txn.ResolveRef(t, ref)
		if err != nil {
			return Ref{}, err
		}
		tag.Version = r.Version
		if r.Kind == RefCommit {
			tag.Commit = r.Name
		} else {
			tag.Commit = r.Commit
		}
	}
	tag.Kind, tag.Name, tag.Time = RefTag, name, time.Now().UTC()
	if err := txn.db.putRef(t, &tag, false); err != nil {
		return Ref{}, err
	}
	return tag, nil
}

// DropTag removes tag name of table t; a missing one is (false, nil) when
// ifExists and 42704 otherwise.
func (db *DB) DropTag(t *TableDesc, name string, ifExists bool) (bool, error) {
	return retryDDL(db, func() (bool, error) {
		key := refKey(t.ID, RefTag, name)
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

// putRef writes ref; an existing one of its name is 42710 unless replace.
func (db *DB) putRef(t *TableDesc, ref *Ref, replace bool) error {
	data, err := json.Marshal(ref)
	if err != nil {
		return assertf("encoding ref %q: %v", ref.Name, err)
	}
	key := refKey(t.ID, ref.Kind, ref.Name)
	_, err = retryDDL(db, func() (struct{}, error) {
		db.catMu.RLock()
		_, live := db.byID[t.ID]
		db.catMu.RUnlock()
		if !live {
			return struct{}{}, undefinedTable(t.Name)
		}
		if !replace {
			_, closer, err := db.kv.Get(key)
			if err == nil {
				closer.Close()
				return struct{}{}, pgerror.Newf(pgerror.DuplicateObject, "tag %q of table %q already exists", ref.Name, t.Name)
			}
			if !errors.Is(err, pebble.ErrNotFound) {
				return struct{}{}, ioErrorf(err, "reading ref %q", ref.Name)
			}
		}
		b := db.kv.NewBatch()
		defer b.Close()
		_ = b.Set(key, data, nil)
		return struct{}{}, db.commitDDL(b)
	})
	return err
}

// Refs lists the named versions of table t: commits (oldest first), then
// tags (by name).
func (db *DB) Refs(t *TableDesc) ([]Ref, error) {
	lo := append(binary.BigEndian.AppendUint64([]byte{'t'}, t.ID), tagRef)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, ioErrorf(err, "reading refs of %q", t.Name)
	}
	defer it.Close()
	var commits, tags []Ref
	for it.First(); it.Valid(); it.Next() {
		var r Ref
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return nil, corruptionf("ref %q: %v", it.Key(), err)
		}
		if r.Kind == RefCommit {
			commits = append(commits, r)
		} else {
			tags = append(tags, r)
		}
	}
	if err := it.Error(); err != nil {
		return nil, ioErrorf(err, "reading refs of %q", t.Name)
	}
	sortRefsByTime(commits)
	return append(commits, tags...), nil
}

func sortRefsByTime(rs []Ref) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && (rs[j].Time.Before(rs[j-1].Time) || rs[j].Time.Equal(rs[j-1].Time) && rs[j].Version < rs[j-1].Version); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// ResolveRef returns the named version ref names for table t: a commit
// id (or a prefix of one at least 6 digits long that only it has), a
// tag, a version number ("42" or "v42"), or a time (the version current
// then, as time travel reads it). A ref naming nothing is 42704.
func (txn *Txn) ResolveRef(t *TableDesc, ref string) (Ref, error) {
	db := txn.db
	if r, ok, err := db.getRef(t, RefTag, ref); err != nil || ok {
		return r, err
	}
	if r, ok, err := db.getRef(t, RefCommit, ref); err != nil || ok {
		return r, err
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
	return Ref{}, pgerror.Newf(pgerror.UndefinedObject, "%q names no commit, tag, version or time of table %q", ref, t.Name)
}

// versionAt returns the version of t current at time at: the last one
// committed at or before it.
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
	if found == 0 {
		return Ref{}, pgerror.Newf(pgerror.UndefinedObject, "table %q has no retained version at %s", t.Name, at.Format(time.RFC3339))
	}
	return Ref{Version: found, Time: at}, nil
}

func (db *DB) getRef(t *TableDesc, kind RefKind, name string) (Ref, bool, error) {
	var r Ref
	ok, err := db.getJSON(refKey(t.ID, kind, name), &r)
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

// namedVersions returns the versions of table id that a ref names.
func (db *DB) namedVersions(r pebble.Reader, id uint64) (map[uint64]bool, error) {
	lo := append(binary.BigEndian.AppendUint64([]byte{'t'}, id), tagRef)
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
		named[ref.Version] = true
	}
	return named, it.Error()
}

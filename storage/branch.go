package storage

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// Branches. A branch of a table is a table of its own (an ID, keys and
// objects of its own) whose rows are laid over the rows of what it forks
// from: its view is each layer of its Base, main's first, read at the
// version the next one forked at, then its own rows, minus the rows any
// of them deleted. Rows carry their table-wide unique ids, so a branch
// deletes a row of its base by writing a deletion marker of its own, and
// nothing is copied: creating a branch writes one key, and writing to it
// writes only its own rows and markers. The branch record is a named
// version of the table (t<id>nb<name>, kind RefBranch) holding the
// branch's table ID and layers, so it is in the location's log with the
// rest and DROP TABLE removes it. VACUUM keeps the versions layers read
// (namedVersions), and with them what those versions read.
// docs/versioning.md.

// RefBranch is a branch: its name is the branch's.
const RefBranch RefKind = 'b'

// MainBranch is the name of the table itself as a branch.
const MainBranch = "main"

// Layer is one level of a branch's view: table Table (the table's own ID
// for main, a branch's for a branch) read at version Version.
type Layer struct {
	Table   uint64
	Version uint64
}

// branchState is a branch in memory.
type branchState struct {
	ref Ref
	ts  *tableState
}

// rootOf returns the ID of the table t is a view of.
func rootOf(t *TableDesc) uint64 {
	if t.Branch != "" {
		return t.Root
	}
	return t.ID
}

// branchDesc derives the descriptor of branch ref of table root.
func branchDesc(root *TableDesc, ref *Ref) *TableDesc {
	d := *root
	d.ID, d.Root, d.Branch, d.Base = ref.Table, root.ID, ref.Name, ref.Base
	// A branch's vector searches run exactly: a table's indexes cover
	// its own fragments only.
	d.Indexes = nil
	return &d
}

// Branch returns the descriptor of branch name of table t (or of the
// table t is a branch of): t's own for "main", 42704 for a branch that
// does not exist.
func (c *Catalog) Branch(t *TableDesc, name string) (*TableDesc, error) {
	return c.db.branch(t, name)
}

func (db *DB) branch(t *TableDesc, name string) (*TableDesc, error) {
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	rs, ok := db.byID[rootOf(t)]
	if !ok {
		return nil, undefinedTable(t.Name)
	}
	if name == MainBranch || name == "" {
		return rs.desc, nil
	}
	b, ok := db.branches[rs.desc.ID][name]
	if !ok {
		return nil, pgerror.Newf(pgerror.UndefinedObject, "branch %q of table %q does not exist", name, t.Name)
	}
	return branchDesc(rs.desc, &b.ref), nil
}

// branchByTable returns the descriptor of the branch of table root whose
// own table is id (root's own descriptor for root itself). Callers hold
// catMu.
func (db *DB) branchByTableLocked(root, id uint64) (*TableDesc, bool) {
	rs, ok := db.byID[root]
	if !ok {
		return nil, false
	}
	if id == 0 || id == root {
		return rs.desc, true
	}
	for _, b := range db.branches[root] {
		if b.ref.Table == id {
			return branchDesc(rs.desc, &b.ref), true
		}
	}
	return nil, false
}

// Branches lists the branches of table t (of the table t is a branch
// of), by name, main first.
func (db *DB) Branches(t *TableDesc) []Ref {
	db.catMu.RLock()
	defer db.catMu.RUnlock()
	root := rootOf(t)
	out := []Ref{{Kind: RefBranch, Name: MainBranch}}
	var rest []Ref
	for _, b := range db.branches[root] {
		rest = append(rest, b.ref)
	}
	slices.SortFunc(rest, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	return append(out, rest...)
}

// checkRefName returns the 22023 error of a branch or tag name that is
// empty, too long, or holds a character refs use as separators.
func checkRefName(kind, name string) error {
	if name == "" || len(name) > maxRefName || strings.ContainsAny(name, "\x00@:") {
		return pgerror.Newf(pgerror.InvalidParameterValue, "invalid %s name %q", kind, name).
			WithDetail("A %s's name has 1 to %d characters, none of them @, : or NUL.", kind, maxRefName)
	}
	return nil
}

// CreateBranch makes branch name of table t (of the table t is a branch
// of) at ref: a branch (its head as the txn reads it), a commit, a tag,
// a version or a time of t; "" for the version of t the txn reads. It
// writes the branch record only: no row is copied.
func (txn *Txn) CreateBranch(t *TableDesc, name, from, author string) (Ref, error) {
	if err := txn.check(); err != nil {
		return Ref{}, err
	}
	if err := checkRefName("branch", name); err != nil {
		return Ref{}, err
	}
	if t.View != "" {
		return Ref{}, pgerror.Newf(pgerror.WrongObjectType, "%q is a view: views have no branches", t.Name)
	}
	if name == MainBranch {
		return Ref{}, pgerror.Newf(pgerror.DuplicateObject, "branch %q of table %q already exists", name, t.Name)
	}
	view := View{Desc: t}
	if from != "" {
		var err error
		if view, err = txn.ResolveView(t, from); err != nil {
			return Ref{}, err
		}
	} else if txn.wrote(t) {
		return Ref{}, pgerror.Newf(pgerror.ObjectNotInPrerequisiteState, "table %q has writes of this transaction", t.Name).
			WithHint("Commit the transaction first; a branch starts at a version that exists.")
	}
	v := view.AsOf
	if v == 0 {
		var err error
		if v, err = txn.readVersion(view.Desc); err != nil {
			return Ref{}, err
		}
	}
	base := slices.Clone(view.Desc.Base)
	if v > 0 {
		base = append(base, Layer{Table: view.Desc.ID, Version: v})
	}
	ref := Ref{Kind: RefBranch, Name: name, Version: v, Base: base, Author: author, Time: time.Now().UTC(),
		Branch: view.Desc.Branch, Commit: view.Ref.commitID()}
	if ref.Commit == "" {
		ref.Commit = txn.db.commitAt(view.Desc, v)
	}
	db := txn.db
	root := rootOf(t)
	_, err := retryDDL(db, func() (struct{}, error) {
		db.catMu.Lock()
		defer db.catMu.Unlock()
		rs, ok := db.byID[root]
		if !ok {
			return struct{}{}, undefinedTable(t.Name)
		}
		if err := db.refNameFree(rs.desc, name); err != nil {
			return struct{}{}, err
		}
		id, err := db.alloc(tableIDCounter, 1)
		if err != nil {
			return struct{}{}, err
		}
		ref.Table = id
		data, err := json.Marshal(&ref)
		if err != nil {
			return struct{}{}, assertf("encoding branch %q: %v", name, err)
		}
		b := db.kv.NewBatch()
		defer b.Close()
		_ = b.Set(refKey(root, RefBranch, name), data, nil)
		if err := db.commitDDL(b); err != nil {
			return struct{}{}, err
		}
		db.addBranchLocked(rs.desc, ref)
		return struct{}{}, nil
	})
	return ref, err
}

// commitID returns the id of the commit r is or was made from.
func (r Ref) commitID() string {
	if r.Kind == RefCommit {
		return r.Name
	}
	return r.Commit
}

// refNameFree returns 42710 if a branch or a tag of table root is named
// name: one name space, so that a ref names one thing. Callers hold
// catMu.
func (db *DB) refNameFree(root *TableDesc, name string) error {
	if _, ok := db.branches[root.ID][name]; ok || name == MainBranch {
		return pgerror.Newf(pgerror.DuplicateObject, "branch %q of table %q already exists", name, root.Name)
	}
	_, closer, err := db.kv.Get(refKey(root.ID, RefTag, name))
	if err == nil {
		closer.Close()
		return pgerror.Newf(pgerror.DuplicateObject, "tag %q of table %q already exists", name, root.Name)
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return ioErrorf(err, "reading refs of %q", root.Name)
	}
	return nil
}

// addBranchLocked puts branch ref of table root in memory. Callers hold
// catMu.
func (db *DB) addBranchLocked(root *TableDesc, ref Ref) *tableState {
	m := db.branches[root.ID]
	if m == nil {
		m = make(map[string]*branchState)
		db.branches[root.ID] = m
	}
	ts, ok := db.byID[ref.Table]
	if !ok {
		ts = &tableState{desc: branchDesc(root, &ref)}
		db.byID[ref.Table] = ts
	}
	m[ref.Name] = &branchState{ref: ref, ts: ts}
	return ts
}

// DropBranch drops branch name of table t with its rows, commits and
// objects; what it shared with its base stays. A branch another branch
// forks from, or that a tag names a version of, is 2BP01; a missing
// one is (false, nil) when ifExists and 42704 otherwise.
func (db *DB) DropBranch(t *TableDesc, name string, ifExists bool) (bool, error) {
	if name == MainBranch {
		return false, pgerror.Newf(pgerror.WrongObjectType, "branch %q is table %q itself", name, t.Name).
			WithHint("DROP TABLE drops it.")
	}
	var dropped *TableDesc
	ok, err := retryDDL(db, func() (bool, error) {
		db.flushMu.Lock()
		defer db.flushMu.Unlock()
		db.catMu.Lock()
		defer db.catMu.Unlock()
		root := rootOf(t)
		rs, ok := db.byID[root]
		if !ok {
			return false, undefinedTable(t.Name)
		}
		br, ok := db.branches[root][name]
		if !ok {
			if ifExists {
				return false, nil
			}
			return false, pgerror.Newf(pgerror.UndefinedObject, "branch %q of table %q does not exist", name, t.Name)
		}
		id := br.ref.Table
		for _, o := range db.branches[root] {
			for _, l := range o.ref.Base {
				if l.Table == id {
					return false, pgerror.Newf(pgerror.DependentObjectsStillExist, "cannot drop branch %q of table %q because branch %q forks from it", name, t.Name, o.ref.Name)
				}
			}
		}
		refs, err := db.Refs(rs.desc)
		if err != nil {
			return false, err
		}
		b := db.kv.NewBatch()
		defer b.Close()
		for _, r := range refs {
			if r.Table != id || r.Kind == RefBranch {
				continue
			}
			if r.Kind == RefTag {
				return false, pgerror.Newf(pgerror.DependentObjectsStillExist, "cannot drop branch %q of table %q because tag %q names a version of it", name, t.Name, r.Name).
					WithHint("Drop the tag first.")
			}
			_ = b.Delete(refKey(root, r.Kind, r.Name), nil)
		}
		lo, hi := tableSpan(id)
		_ = b.Delete(refKey(root, RefBranch, name), nil)
		_ = b.DeleteRange(lo, hi, nil)
		_ = b.Set(droppedKey(id), []byte(t.Name), nil)
		if err := db.commitDDL(b); err != nil {
			return false, err
		}
		dropped = br.ts.desc
		delete(db.branches[root], name)
		delete(db.byID, id)
		db.forgetFork(id)
		return true, nil
	})
	if dropped != nil {
		db.deleteDroppedLater([]*TableDesc{dropped})
	}
	return ok, err
}

// branchDescsLocked returns the descriptors of the branches of the
// tables ts, for dropping them with the tables. Callers hold catMu.
func (db *DB) branchDescsLocked(ts []*TableDesc) []*TableDesc {
	var out []*TableDesc
	for _, t := range ts {
		for _, b := range db.branches[t.ID] {
			out = append(out, b.ts.desc)
		}
	}
	return out
}

// dropBranchesBatch adds to b the writes that drop the branches bs (their
// table's own keys go with the table's range).
func dropBranchesBatch(b *pebble.Batch, bs []*TableDesc) error {
	for _, t := range bs {
		lo, hi := tableSpan(t.ID)
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
		if err := b.Set(droppedKey(t.ID), []byte(t.Name), nil); err != nil {
			return err
		}
	}
	return nil
}

// forgetBranchesLocked removes the branches of dropped table root from
// memory. Callers hold catMu.
func (db *DB) forgetBranchesLocked(root uint64) {
	for _, b := range db.branches[root] {
		delete(db.byID, b.ref.Table)
		db.forgetFork(b.ref.Table)
	}
	delete(db.branches, root)
}

// loadBranchesLocked reads the branch records of every table and makes
// the in-memory branches agree: new ones added, dropped ones removed,
// each one's head read. Callers hold catMu (and commitMu when other
// transactions may run).
func (db *DB) loadBranchesLocked(seen map[uint64]bool) error {
	live := make(map[uint64]map[string]bool)
	for _, rs := range db.byID {
		t := rs.desc
		if t.Branch != "" {
			continue
		}
		lo := refKey(t.ID, RefBranch, "")
		it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return ioErrorf(err, "reading branches of %q", t.Name)
		}
		for it.First(); it.Valid(); it.Next() {
			var ref Ref
			if err := json.Unmarshal(it.Value(), &ref); err != nil {
				it.Close()
				return corruptionf("branch %q: %v", it.Key(), err)
			}
			if live[t.ID] == nil {
				live[t.ID] = make(map[string]bool)
			}
			live[t.ID][ref.Name] = true
			if cur, ok := db.branches[t.ID][ref.Name]; ok && cur.ref.Table == ref.Table {
				cur.ts.desc = branchDesc(t, &ref)
				if seen != nil {
					seen[ref.Table] = true
				}
				continue
			}
			ts := db.addBranchLocked(t, ref)
			if seen != nil {
				seen[ref.Table] = true
			}
			h, err := headVersion(db.kv, ref.Table)
			if err != nil {
				it.Close()
				return err
			}
			ts.head, ts.baseHead = h, h
		}
		if err := it.Close(); err != nil {
			return ioErrorf(err, "reading branches of %q", t.Name)
		}
	}
	for root, m := range db.branches {
		for name, b := range m {
			if !live[root][name] {
				delete(m, name)
				if cur, ok := db.byID[b.ref.Table]; ok && cur == b.ts {
					delete(db.byID, b.ref.Table)
				}
			}
		}
		if len(m) == 0 {
			delete(db.branches, root)
		}
	}
	return nil
}

// commitAt returns the id of the latest commit of view t at or before
// version v, "" if none.
func (db *DB) commitAt(t *TableDesc, v uint64) string {
	refs, err := db.refsOf(rootOf(t))
	if err != nil {
		return ""
	}
	var best *Ref
	for i := range refs {
		r := &refs[i]
		if r.Kind != RefCommit || r.tableID(t) != t.ID || r.Version > v {
			continue
		}
		if best == nil || r.Version > best.Version || r.Version == best.Version && r.Time.After(best.Time) {
			best = r
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// tableID returns the table ID of the version r names, within the
// table t is a view of.
func (r *Ref) tableID(t *TableDesc) uint64 {
	if r.Table != 0 {
		return r.Table
	}
	return rootOf(t)
}

// wrote reports whether the txn has writes to t.
func (txn *Txn) wrote(t *TableDesc) bool {
	tt, ok := txn.tables[t.ID]
	return ok && (tt.inserted > 0 || len(tt.deleted) > 0 || len(tt.ownDel) > 0)
}

// View returns the descriptor that statements naming name read and
// write: table name of the catalog's database on branch (main when ""),
// or for "table@ref" the view ref names (docs/versioning.md): a branch,
// which is written as the table is, or a commit, a tag, a version or a
// time, read-only. A name with no table of its own and no @ is 42P01.
func (c *Catalog) View(name, branch string) (*TableDesc, error) {
	t, err := c.Table(name)
	if err == nil || !strings.Contains(name, "@") {
		if err != nil || branch == "" || branch == MainBranch {
			return t, err
		}
		return c.db.branch(t, branch)
	}
	at := strings.LastIndexByte(name, '@')
	t, terr := c.Table(name[:at])
	if terr != nil {
		return nil, err
	}
	if t.View != "" {
		return nil, pgerror.Newf(pgerror.WrongObjectType, "%q is a view: views have no versions", t.Name)
	}
	txn := c.db.Begin()
	defer txn.Rollback()
	v, rerr := txn.ResolveView(t, name[at+1:])
	if rerr != nil {
		return nil, rerr
	}
	if v.AsOf == 0 {
		return v.Desc, nil
	}
	d := *v.Desc
	d.AsOf = v.AsOf
	return &d, nil
}

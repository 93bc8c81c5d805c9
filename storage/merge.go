package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Merges and resets. Both write the changes a diff finds into a branch as
// one transaction of ordinary inserts and deletes (an inserted row is a
// copy with a new id), read from one snapshot and written in another
// transaction that imports it, then name the result with a commit: a
// merge's has two parents. docs/versioning.md.

// MergeStrategy says what a merge does with a conflict: a key (or, without
// a primary key, a row) both sides changed since their common ancestor,
// other than both deleting it.
type MergeStrategy uint8

// Merge strategies.
const (
	// MergeFail fails the merge with 40001, naming the first conflicts.
	MergeFail MergeStrategy = iota
	// MergeOurs keeps the target's side of each conflict.
	MergeOurs
	// MergeTheirs takes the merged side's.
	MergeTheirs
)

// maxConflictKeys is how many conflicting keys a failed merge names.
const maxConflictKeys = 5

// MergeStats counts what a merge or reset wrote.
type MergeStats struct {
	Inserted, Deleted, Conflicts int64
}

// commonLayers returns the layers two views share: their ancestor.
func commonLayers(a, b []Layer) []Layer {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	out := slices.Clone(a[:k])
	if k < len(a) && k < len(b) && a[k].Table == b[k].Table {
		if v := min(a[k].Version, b[k].Version); v > 0 {
			out = append(out, Layer{Table: a[k].Table, Version: v})
		}
	}
	return out
}

// layersView returns a read-only descriptor of view layers ls of the
// table t is a view of.
func layersView(t *TableDesc, ls []Layer) *TableDesc {
	d := *t
	root := rootOf(t)
	last := ls[len(ls)-1]
	d.ID, d.Base, d.AsOf, d.Root = last.Table, ls[:len(ls)-1], last.Version, root
	switch {
	case d.ID == root:
		d.Branch = ""
	case d.ID != t.ID || d.Branch == "":
		d.Branch = "@base" // a branch's view, not named
	}
	return &d
}

// changeWriter writes changes into a branch: deletes rows at once, and
// inserts copies of rows of another view when done (flush), in two runs:
// rows that keep their ids, ascending, then rows with new ids.
type changeWriter struct {
	txn  *Txn
	t    *TableDesc
	src  *TableDesc
	dels []uint64
	delR *types.Batch
	// keep and fresh are the ids (in src) of the rows to copy: with their
	// ids, or with new ones.
	keep, fresh []uint64
	key         []byte
	st          MergeStats
	// charge takes what the writer (and its merge) holds from a session's
	// budget; charged is what it took, given back by release.
	charge  Charge
	charged int64
}

// take charges n bytes.
func (w *changeWriter) take(n int64) error {
	if w.charge == nil {
		return nil
	}
	if err := w.charge(n); err != nil {
		return err
	}
	w.charged += n
	return nil
}

// release gives back what the writer charged.
func (w *changeWriter) release() {
	if w.charge != nil && w.charged > 0 {
		w.charge(-w.charged)
		w.charged = 0
	}
}

func newChangeWriter(txn *Txn, t, src *TableDesc, charge Charge) *changeWriter {
	return &changeWriter{txn: txn, t: t, src: src, delR: types.NewBatch(t.ColumnTypes(), types.BatchSize), charge: charge}
}

// insert copies row id of the source view: keeping its id unless it may
// not (it was deleted in the branch's view: a marker of that id would
// hide the copy).
func (w *changeWriter) insert(id uint64, keepID bool) error {
	if keepID {
		gone, err := w.txn.deletedInView(w.t, id)
		if err != nil {
			return err
		}
		keepID = !gone
	}
	if keepID {
		w.keep = append(w.keep, id)
	} else {
		w.fresh = append(w.fresh, id)
	}
	w.st.Inserted++
	return w.take(chargeID)
}

// delete deletes row id, whose values are row i of b.
func (w *changeWriter) delete(id uint64, b *types.Batch, i int) error {
	w.dels = append(w.dels, id)
	for c := range w.delR.Cols {
		w.delR.Cols[c].AppendFrom(b.Cols[c], i)
	}
	w.delR.SetLen(len(w.dels))
	w.st.Deleted++
	if len(w.dels) >= types.BatchSize {
		return w.flushDeletes()
	}
	return nil
}

// deleteKey deletes the row of the branch holding the primary key of row
// i of b, if one does. A diff names each key once: what is queued holds
// other keys.
func (w *changeWriter) deleteKey(b *types.Batch, i int) error {
	w.key = appendPKKey(w.key[:0], w.t, b, i)
	id, ok, err := w.txn.pkRow(w.t, w.key)
	if err != nil || !ok {
		return err
	}
	return w.delete(id, b, i)
}

func (w *changeWriter) flushDeletes() error {
	if len(w.dels) == 0 {
		return nil
	}
	if err := w.txn.DeleteRows(w.t, w.dels, w.delR); err != nil {
		return err
	}
	w.dels = w.dels[:0]
	w.delR.Reset()
	return nil
}

// flush writes the deletions, then the copies, read from the source view
// by id.
func (w *changeWriter) flush() error {
	if err := w.flushDeletes(); err != nil {
		return err
	}
	if len(w.keep)+len(w.fresh) == 0 {
		return nil
	}
	slices.Sort(w.keep)
	rf, err := w.txn.NewRowFetcher(w.src, allColumns(len(w.src.Columns)), 0)
	if err != nil {
		return err
	}
	defer rf.Close()
	for _, run := range []struct {
		ids  []uint64
		keep bool
	}{{w.keep, true}, {w.fresh, false}} {
		for k := 0; k < len(run.ids); k += types.BatchSize {
			b, got, err := rf.Fetch(run.ids[k:min(k+types.BatchSize, len(run.ids))], nil)
			if err != nil {
				return err
			}
			if len(got) != min(types.BatchSize, len(run.ids)-k) {
				return assertf("copying rows of %q: %d of %d found", w.t.Name, len(got), min(types.BatchSize, len(run.ids)-k))
			}
			if run.keep {
				err = w.txn.insertKeeping(w.t, b, got)
			} else {
				err = w.txn.Insert(w.t, b)
			}
			if err != nil {
				return err
			}
		}
	}
	w.keep, w.fresh = nil, nil
	return nil
}

// deletedInView reports whether view t deletes row id: a deletion marker
// of it in t's table or in a layer, within the layer's versions.
func (txn *Txn) deletedInView(t *TableDesc, id uint64) (bool, error) {
	if tt := txn.tables[t.ID]; tt != nil {
		if _, ok := tt.deleted[id]; ok {
			return true, nil
		}
	}
	ls := append(slices.Clone(t.Base), Layer{Table: t.ID, Version: ^uint64(0)})
	for _, l := range ls {
		v, closer, err := txn.snap.Get(appendIDKey(nil, l.Table, tagDelete, id))
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, ioErrorf(err, "reading deletions of %q", t.Name)
		}
		x, _ := binary.Uvarint(v)
		closer.Close()
		if x <= l.Version {
			return true, nil
		}
	}
	return false, nil
}

// pairTxns returns a transaction to read from and one to write in that
// reads the same snapshot.
func (db *DB) pairTxns() (rt, wt *Txn, err error) {
	rt = db.Begin()
	id, err := rt.ExportSnapshot()
	if err != nil {
		rt.Rollback()
		return nil, nil, err
	}
	wt = db.Begin()
	if err := wt.ImportSnapshot(id); err != nil {
		rt.Rollback()
		wt.Rollback()
		return nil, nil, err
	}
	return rt, wt, nil
}

// mergeBase returns the view a merge of from into into diffs both sides
// against: the version one of them absorbed from the other in their last
// merge (the merge commit's second parent), else their common layers.
func (db *DB) mergeBase(rt *Txn, into, from *TableDesc, li, lf []Layer) (*TableDesc, []Layer, error) {
	refs, err := db.Refs(into)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]*Ref)
	for i := range refs {
		if refs[i].Kind == RefCommit {
			byID[refs[i].Name] = &refs[i]
		}
	}
	ti, tf := li[len(li)-1], lf[len(lf)-1]
	var best, bestAt *Ref
	for i := range refs {
		m := &refs[i]
		if m.Kind != RefCommit || len(m.Parents) < 2 {
			continue
		}
		src, ok := byID[m.Parents[1]]
		if !ok {
			continue
		}
		mt, st := m.tableID(into), src.tableID(into)
		ok = mt == ti.Table && m.Version <= ti.Version && st == tf.Table && src.Version <= tf.Version ||
			mt == tf.Table && m.Version <= tf.Version && st == ti.Table && src.Version <= ti.Version
		if ok && (bestAt == nil || m.Time.After(bestAt.Time)) {
			best, bestAt = src, m
		}
	}
	if best == nil {
		anc := commonLayers(li, lf)
		if len(anc) == 0 {
			return into, nil, nil
		}
		return layersView(into, anc), anc, nil
	}
	db.catMu.RLock()
	d, ok := db.branchByTableLocked(rootOf(into), best.tableID(into))
	db.catMu.RUnlock()
	if !ok {
		return nil, nil, assertf("merge base %s: its branch is gone", best.Name)
	}
	v := *d
	v.AsOf = best.Version
	ls, err := rt.viewLayers(&v)
	return &v, ls, err
}

// change is one side's change of a key since the merge base: its kind
// and the id of the row the key has now (0 if deleted).
type change struct {
	kind DiffKind
	row  uint64
	sum  uint64 // of the row's values
}

// rowSum hashes the values of row i of b.
func rowSum(seed maphash.Seed, buf *[]byte, b *types.Batch, i int) uint64 {
	*buf = types.AppendRow((*buf)[:0], b, i)
	return maphash.Bytes(seed, *buf)
}

// Merge applies to branch into (a writable view: a branch's head) the
// changes view from made since their merge base (mergeBase), as one
// transaction, and names the result with a merge commit whose parents are
// into's latest commit and from's (made, with the message "merge source",
// if from's version has none). Rows are copied with their ids, so that a
// later merge either way finds them the same rows. A conflict (a key, or
// without a primary key a row, both sides changed, other than in the
// same way) fails the merge with 40001 under MergeFail. It returns the
// merge commit's id.
func (db *DB) Merge(into, from *TableDesc, strategy MergeStrategy, author, message string, charge Charge) (string, MergeStats, error) {
	if err := writable(into); err != nil {
		return "", MergeStats{}, err
	}
	if rootOf(into) != rootOf(from) {
		return "", MergeStats{}, assertf("merge of views of two tables")
	}
	rt, wt, err := db.pairTxns()
	if err != nil {
		return "", MergeStats{}, err
	}
	defer rt.Rollback()
	defer wt.Rollback()
	li, err := rt.viewLayers(into)
	if err != nil {
		return "", MergeStats{}, err
	}
	lf, err := rt.viewLayers(from)
	if err != nil {
		return "", MergeStats{}, err
	}
	base, lb, err := db.mergeBase(rt, into, from, li, lf)
	if err != nil {
		return "", MergeStats{}, err
	}
	pk := len(into.PrimaryKey) > 0
	// What into changed since the base, by key, or by row.
	ours := make(map[string]change)
	oursRows := make(map[uint64]DiffKind)
	var key, row []byte
	seed := maphash.MakeSeed()
	// What the merge holds per key is charged, and given back at its end.
	w := newChangeWriter(wt, into, from, charge)
	defer w.release()
	d, err := rt.diffLayers(base, lb, into, li, charge)
	if err != nil {
		return "", MergeStats{}, err
	}
	for {
		b, kinds, ids, err := d.Next()
		if err != nil {
			d.Close()
			return "", MergeStats{}, err
		}
		if b == nil {
			break
		}
		for i, k := range kinds {
			if pk {
				key = appendPKKey(key[:0], into, b, i)
				c := change{kind: k, row: ids[i]}
				if k == DiffDeleted {
					c.row = 0
				} else {
					c.sum = rowSum(seed, &row, b, i)
				}
				ours[string(key)] = c
				err = w.take(chargeEntry + 24 + int64(len(key)))
			} else {
				oursRows[ids[i]] = k
				err = w.take(chargeEntry)
			}
			if err != nil {
				d.Close()
				return "", MergeStats{}, err
			}
		}
	}
	d.Close()
	// What from changed, applied to into.
	var conflicts []string
	var row2 []byte
	if d, err = rt.diffLayers(base, lb, from, lf, charge); err != nil {
		return "", MergeStats{}, err
	}
	defer d.Close()
	for {
		b, kinds, ids, err := d.Next()
		if err != nil {
			return "", MergeStats{}, err
		}
		if b == nil {
			break
		}
		for i, k := range kinds {
			if !pk {
				// A row both sides added (a copy) or deleted is done.
				if _, same := oursRows[ids[i]]; same {
					continue
				}
				if k == DiffAdded {
					err = w.insert(ids[i], true)
				} else {
					err = w.delete(ids[i], b, i)
				}
				if err != nil {
					return "", MergeStats{}, err
				}
				continue
			}
			key = appendPKKey(key[:0], into, b, i)
			row := ids[i]
			if k == DiffDeleted {
				row = 0
			}
			o, changed := ours[string(key)]
			if changed && (o.row == row || row != 0 && o.row != 0 && o.sum == rowSum(seed, &row2, b, i)) {
				continue // the same change on both sides
			}
			if changed {
				w.st.Conflicts++
				switch strategy {
				case MergeFail:
					if len(conflicts) < maxConflictKeys {
						conflicts = append(conflicts, keyText(into, b, i))
					}
					continue
				case MergeOurs:
					continue
				}
			}
			// The target's row of the key (the base's, or one of the same
			// values; under theirs, its own) goes, unless the key is new
			// to both; the other side's row comes, unless it deleted it.
			if k != DiffAdded || changed {
				err = w.deleteKey(b, i)
			}
			if err == nil && k != DiffDeleted {
				err = w.insert(ids[i], true)
			}
			if err != nil {
				return "", MergeStats{}, err
			}
		}
	}
	if len(conflicts) > 0 {
		return "", w.st, pgerror.Newf(pgerror.SerializationFailure, "merge conflict: %d keys of table %q changed on both sides", w.st.Conflicts, into.Name).
			WithDetail("Conflicting keys: %s.", strings.Join(conflicts, ", ")).
			WithHint("Merge with 'ours' or 'theirs' to keep one side of each conflict.")
	}
	if err := w.flush(); err != nil {
		return "", w.st, err
	}
	// The merged side's commit: its latest at the version merged, or one
	// made now.
	fv := lf[len(lf)-1].Version
	source := db.commitAt(from, fv)
	if source == "" || db.writesBetween(from, db.refVersion(from, source), fv) {
		if source, err = rt.commitVersion(from, "merge source", author, nil); err != nil {
			return "", w.st, err
		}
	}
	rt.Rollback()
	if err := wt.Commit(); err != nil {
		return "", w.st, err
	}
	if message == "" {
		message = fmt.Sprintf("merge %s into %s", refLabel(from), refLabel(into))
	}
	ct := db.Begin()
	defer ct.Rollback()
	id, err := ct.commitVersion(into, message, author, &source)
	return id, w.st, err
}

// refVersion returns the version commit id names.
func (db *DB) refVersion(t *TableDesc, id string) uint64 {
	r, ok, _ := db.getRef(t, RefCommit, id)
	if !ok {
		return 0
	}
	return r.Version
}

// writesBetween reports whether a write committed a version of view t's
// table in (lo, hi] (flushes and compactions change no row), or may have:
// a version there is no longer retained.
func (db *DB) writesBetween(t *TableDesc, lo, hi uint64) bool {
	vs, err := db.tableVersions(t)
	if err != nil {
		return true
	}
	prev := lo
	for _, v := range vs {
		if v.Version <= lo || v.Version > hi {
			continue
		}
		if v.Op == OpName(opWrite) && (v.Added != 0 || v.Deleted != 0) || v.Parent != prev {
			return true
		}
		prev = v.Version
	}
	return prev != hi
}

// refLabel names view t in a message: its branch, and its version when
// it is one.
func refLabel(t *TableDesc) string {
	b := t.Branch
	if b == "" || strings.HasPrefix(b, "@") {
		b = MainBranch
	}
	if t.AsOf != 0 {
		return fmt.Sprintf("%s@v%d", b, t.AsOf)
	}
	return b
}

// Reset makes branch t (a writable view) read as view to does, in one
// transaction that writes the difference (history is kept: the versions
// before stay), and names the result with a commit. It returns the
// commit's id.
func (db *DB) Reset(t, to *TableDesc, author, message string, charge Charge) (string, MergeStats, error) {
	if err := writable(t); err != nil {
		return "", MergeStats{}, err
	}
	rt, wt, err := db.pairTxns()
	if err != nil {
		return "", MergeStats{}, err
	}
	defer rt.Rollback()
	defer wt.Rollback()
	d, err := rt.Diff(t, to, charge)
	if err != nil {
		return "", MergeStats{}, err
	}
	defer d.Close()
	// Rows come back as copies with new ids: the branch deleted some of
	// them, and their markers stay (history is kept).
	w := newChangeWriter(wt, t, to, charge)
	defer w.release()
	for {
		b, kinds, ids, err := d.Next()
		if err != nil {
			return "", w.st, err
		}
		if b == nil {
			break
		}
		for i, k := range kinds {
			switch k {
			case DiffAdded:
				err = w.insert(ids[i], false)
			case DiffDeleted:
				err = w.delete(ids[i], b, i)
			case DiffUpdated:
				if err = w.deleteKey(b, i); err == nil {
					err = w.insert(ids[i], false)
				}
			}
			if err != nil {
				return "", w.st, err
			}
		}
	}
	if err := w.flush(); err != nil {
		return "", w.st, err
	}
	d.Close()
	rt.Rollback()
	if err := wt.Commit(); err != nil {
		return "", w.st, err
	}
	if message == "" {
		message = "reset to " + refLabel(to)
	}
	ct := db.Begin()
	defer ct.Rollback()
	id, err := ct.commitVersion(t, message, author, nil)
	return id, w.st, err
}

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// Primary keys of a branch. A branch's own primary key entries (t<branch>k)
// hold the keys its own commits set, and an empty value for each key it
// deleted (a tombstone: the key is not looked for further down). Below
// them lie the keys of the view the branch forked from, which never
// changes: they are read once, by a scan of that view, into a sorted,
// packed table kept in memory (forkKeys), the first time a key of the
// branch is looked up.

// forkKeys is the primary keys of a branch's base view, sorted: key i is
// data[offs[i]:offs[i+1]] (the key's encoding after its t<id>k prefix),
// held by row rows[i].
type forkKeys struct {
	data []byte
	offs []uint32
	rows []uint64
}

func (f *forkKeys) key(i int) []byte { return f.data[f.offs[i]:f.offs[i+1]] }

// find returns the row holding key (encoded after its prefix).
func (f *forkKeys) find(key []byte) (uint64, bool) {
	n := len(f.rows)
	i := sort.Search(n, func(i int) bool { return bytes.Compare(f.key(i), key) >= 0 })
	if i < n && bytes.Equal(f.key(i), key) {
		return f.rows[i], true
	}
	return 0, false
}

// forkCache holds the forkKeys of branches, by the branch's table ID.
type forkCache struct {
	mu sync.Mutex
	m  map[uint64]*forkKeys
}

// pkPrefixLen is the length of a primary key entry key's t<id>k prefix.
const pkPrefixLen = 1 + 8 + 1

// branchPK looks key (a primary key entry key of branch t) up below the
// branch's own entries: among the keys of the view it forked from.
func (db *DB) branchPK(t *TableDesc, key []byte) (uint64, bool, error) {
	fk, err := db.forkKeysOf(t)
	if err != nil {
		return 0, false, err
	}
	row, ok := fk.find(key[pkPrefixLen:])
	return row, ok, nil
}

// forkKeysOf returns the keys of the view branch t forked from, reading
// them on first use.
func (db *DB) forkKeysOf(t *TableDesc) (*forkKeys, error) {
	c := &db.forks
	c.mu.Lock()
	defer c.mu.Unlock()
	if fk, ok := c.m[t.ID]; ok {
		return fk, nil
	}
	fk := &forkKeys{offs: []uint32{0}}
	if n := len(t.Base); n > 0 {
		// The base view: the layers below the last, and the last read at
		// its version.
		bt := *t
		bt.ID, bt.Base = t.Base[n-1].Table, t.Base[:n-1]
		if n == 1 {
			bt.Branch = ""
		}
		if err := db.readKeys(&bt, t.Base[n-1].Version, fk); err != nil {
			return nil, err
		}
	}
	if c.m == nil {
		c.m = make(map[uint64]*forkKeys)
	}
	c.m[t.ID] = fk
	return fk, nil
}

// readKeys fills fk with the primary keys of view t at version asOf,
// sorted.
func (db *DB) readKeys(t *TableDesc, asOf uint64, fk *forkKeys) error {
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.ScanWith(t, ScanOptions{Cols: t.PrimaryKey, AsOf: asOf})
	if err != nil {
		return err
	}
	defer sc.Close()
	// Keys are encoded from a batch of the table's layout: the key
	// columns of the scan's batch, in their places.
	full := &keyBatch{t: t}
	var buf []byte
	type ent struct {
		off, end uint32
		row      uint64
	}
	var ents []ent
	for {
		b, ids, err := sc.Next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		full.bind(b)
		for i, id := range ids {
			start := len(fk.data)
			buf = appendPKKey(buf[:0], t, full.b, i)
			fk.data = append(fk.data, buf[pkPrefixLen:]...)
			ents = append(ents, ent{uint32(start), uint32(len(fk.data)), id})
		}
	}
	slices.SortFunc(ents, func(a, b ent) int { return bytes.Compare(fk.data[a.off:a.end], fk.data[b.off:b.end]) })
	data := make([]byte, 0, len(fk.data))
	fk.rows = make([]uint64, 0, len(ents))
	for _, e := range ents {
		data = append(data, fk.data[e.off:e.end]...)
		fk.offs = append(fk.offs, uint32(len(data)))
		fk.rows = append(fk.rows, e.row)
	}
	fk.data = data
	return nil
}

// keyBatch lays a scan's batch of key columns out as a batch of the
// table's columns, for appendPKKey.
type keyBatch struct {
	t *TableDesc
	b *types.Batch
}

// bind makes k.b hold the key columns of kb, a batch of t.PrimaryKey's
// columns in order.
func (k *keyBatch) bind(kb *types.Batch) {
	if k.b == nil {
		k.b = &types.Batch{Cols: make([]*types.Vec, len(k.t.Columns))}
	}
	for j, c := range k.t.PrimaryKey {
		k.b.Cols[c] = kb.Cols[j]
	}
}

// forgetFork drops the cached keys of dropped branch id.
func (db *DB) forgetFork(id uint64) {
	db.forks.mu.Lock()
	delete(db.forks.m, id)
	db.forks.mu.Unlock()
}

// viewPK looks key (a primary key entry key of view t) up among the
// committed entries of r: t's own, then for a branch the keys of its
// base. An empty value is a branch's tombstone: no row holds the key.
func (db *DB) viewPK(r pebble.Reader, t *TableDesc, key []byte) (row uint64, found bool, err error) {
	v, closer, err := r.Get(key)
	switch {
	case err == nil:
		defer closer.Close()
		if len(v) == 0 {
			return 0, false, nil
		}
		if len(v) != 8 {
			return 0, false, corruptionf("primary key entry: %d-byte value", len(v))
		}
		return binary.BigEndian.Uint64(v), true, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, false, ioErrorf(err, "reading primary key")
	}
	if t.Branch == "" {
		return 0, false, nil
	}
	return db.branchPK(t, key)
}

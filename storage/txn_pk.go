package storage

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// pkSet holds the primary key entries a transaction wrote, by key. A bulk
// load writes millions, so it is built for that. The keys (after their
// t<id>k prefix, which names the table) lie back to back in pages of
// their table, the entries (16 bytes each) in pages too, in the order they
// were first written: nothing is
// copied as the set grows, the garbage collector has nothing to walk in
// it, and the commit's batch gets the keys in that order, which Pebble
// sorts cheaply when they came sorted.
//
// A load's keys mostly ascend (serial ids, ordered input), so each table
// keeps the run of its entries that were each past all the keys before:
// a key past the run's last is new, which one comparison tells, and joins
// the run. Other keys are looked up in the run (from its end, where the
// keys of partly ordered input are) and in an open-addressing table of
// hash tags and entry indexes, which holds the entries off the run.
type pkSet struct {
	seed   maphash.Seed
	tables []pkTable
	// ents holds the entries in pages of pkEntPage; n counts them.
	ents [][]pkEnt
	n    int
	// pages hold the keys; keyBytes counts them.
	pages    []pkPage
	keyBytes int
	// slots is empty or a power of two long: 0 is empty, else the hash
	// tag in the high half and the entry's index + 1 in the low one;
	// hashed counts the entries in it.
	slots  []uint64
	hashed int
	// key is the buffer of each.
	key []byte
}

// pkTable is a table with entries in a pkSet.
type pkTable struct {
	// t is its latest descriptor, as a map keyed by the whole key would
	// keep the latest writer's.
	t *TableDesc
	// run holds the indexes of its entries whose keys ascend, each past
	// the keys of all its entries before it.
	run []uint32
	// page is the index of the page its keys go to, or -1.
	page int
}

// pkPage is a page of keys of one table.
type pkPage struct {
	table uint32
	data  []byte
}

// pkEnt is one entry, in 16 bytes: rowp is its row id with the present
// flag in the top bit (row ids are below 2^63); loc is where its key is:
// the page (24 bits), the offset in it (20 bits) and the length (20 bits,
// pkWholePage for a key that fills a page of its own).
type pkEnt struct {
	rowp, loc uint64
}

const (
	pkPresent   = 1 << 63
	pkWholePage = 1<<20 - 1
)

func (e *pkEnt) row() uint64   { return e.rowp &^ pkPresent }
func (e *pkEnt) present() bool { return e.rowp&pkPresent != 0 }
func (e *pkEnt) page() int     { return int(e.loc >> 40) }

// set sets the entry's row and present flag.
func (e *pkEnt) set(row uint64, present bool) {
	e.rowp = row
	if present {
		e.rowp |= pkPresent
	}
}

// pkPageSize is the size of a page of keys; a key of pkWholePage bytes
// or more has a page of its own. pkEntPage is the number of entries in a
// page of them.
const (
	pkPageSize = 1 << 20
	pkEntShift = 15
	pkEntPage  = 1 << pkEntShift
)

// len returns the number of entries.
func (s *pkSet) len() int { return s.n }

// ent returns entry i.
func (s *pkSet) ent(i int) *pkEnt { return &s.ents[i>>pkEntShift][i&(pkEntPage-1)] }

// keyOf returns entry i's key, after its prefix.
func (s *pkSet) keyOf(i int) []byte {
	loc := s.ent(i).loc
	data := s.pages[loc>>40].data
	off, n := loc>>20&pkWholePage, loc&pkWholePage
	if n == pkWholePage {
		return data
	}
	return data[off : off+n]
}

// tableOfEnt returns the table index of entry i.
func (s *pkSet) tableOfEnt(i int) uint32 { return s.pages[s.ent(i).page()].table }

// table returns the index of t's entries, making t the descriptor they
// carry.
func (s *pkSet) table(t *TableDesc) uint32 {
	for i := range s.tables {
		if s.tables[i].t.ID == t.ID {
			s.tables[i].t = t
			return uint32(i)
		}
	}
	s.tables = append(s.tables, pkTable{t: t, page: -1})
	return uint32(len(s.tables) - 1)
}

// tableOf returns the index of the table of a whole key, or false.
func (s *pkSet) tableOf(key []byte) (uint32, bool) {
	if len(key) < pkPrefixLen {
		return 0, false
	}
	id := binary.BigEndian.Uint64(key[1:9])
	for i := range s.tables {
		if s.tables[i].t.ID == id {
			return uint32(i), true
		}
	}
	return 0, false
}

// lookup returns the index of the entry of key (after its prefix) of
// table ti; past reports that key is past the table's run, so new.
func (s *pkSet) lookup(ti uint32, key []byte) (i int, found, past bool) {
	run := s.tables[ti].run
	if len(run) == 0 || bytes.Compare(key, s.keyOf(int(run[len(run)-1]))) > 0 {
		return 0, false, true
	}
	if i, ok := s.searchRun(run, key); ok {
		return i, true, false
	}
	if s.hashed == 0 {
		return 0, false, false
	}
	slot, found := s.find(ti, key, s.tag(ti, key))
	if !found {
		return 0, false, false
	}
	return int(uint32(s.slots[slot])) - 1, true, false
}

// searchRun looks key up in run, whose last key is not below it: it
// gallops back from the end, then bisects.
func (s *pkSet) searchRun(run []uint32, key []byte) (int, bool) {
	n := len(run)
	lo, hi := 0, n-1 // the first key not below key is in run[lo:hi+1]
	for step := 1; ; step *= 2 {
		j := n - 1 - step
		if j < 0 {
			break
		}
		if bytes.Compare(s.keyOf(int(run[j])), key) < 0 {
			lo = j + 1
			break
		}
		hi = j
	}
	k := lo + sort.Search(hi-lo, func(x int) bool { return bytes.Compare(s.keyOf(int(run[lo+x])), key) >= 0 })
	i := int(run[k])
	return i, bytes.Equal(s.keyOf(i), key)
}

// tag hashes a key (after its prefix) of table ti; it is never 0.
func (s *pkSet) tag(ti uint32, key []byte) uint32 {
	h := maphash.Bytes(s.seed, key) ^ uint64(ti)*0x9e3779b97f4a7c15
	return uint32(h>>32) | 1
}

// find returns the slot of key (after its prefix) of table ti: the one
// holding its entry, or the empty one where it would go.
func (s *pkSet) find(ti uint32, key []byte, tag uint32) (slot int, found bool) {
	mask := len(s.slots) - 1
	for i := int(tag) & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == 0 {
			return i, false
		}
		if uint32(v>>32) != tag {
			continue
		}
		if e := int(uint32(v)) - 1; s.tableOfEnt(e) == ti && string(s.keyOf(e)) == string(key) {
			return i, true
		}
	}
}

// get returns the entry of a whole key.
func (s *pkSet) get(key []byte) (pkEntry, bool) {
	ti, ok := s.tableOf(key)
	if !ok {
		return pkEntry{}, false
	}
	i, found, _ := s.lookup(ti, key[pkPrefixLen:])
	if !found {
		return pkEntry{}, false
	}
	e := s.ent(i)
	return pkEntry{table: s.tables[ti].t, row: e.row(), present: e.present()}, true
}

// add returns the entry of key (after its prefix) of table ti, adding it,
// present and held by row, when there was none (found false). The pointer
// is valid until the next add.
func (s *pkSet) add(ti uint32, key []byte, row uint64) (e *pkEnt, found bool) {
	i, found, past := s.lookup(ti, key)
	if found {
		return s.ent(i), true
	}
	i = s.n
	if past {
		s.tables[ti].run = append(s.tables[ti].run, uint32(i))
	} else {
		if 4*(s.hashed+1) > 3*len(s.slots) {
			s.grow()
		}
		tag := s.tag(ti, key)
		slot, _ := s.find(ti, key, tag)
		s.slots[slot] = uint64(tag)<<32 | uint64(i+1)
		s.hashed++
	}
	page, off, n := s.tables[ti].page, 0, len(key)
	if n >= pkWholePage {
		page, n = len(s.pages), pkWholePage
		s.pages = append(s.pages, pkPage{table: ti, data: append([]byte(nil), key...)})
	} else {
		if page < 0 || len(s.pages[page].data)+len(key) > pkPageSize {
			page = len(s.pages)
			s.pages = append(s.pages, pkPage{table: ti, data: make([]byte, 0, pkPageSize)})
			s.tables[ti].page = page
		}
		off = len(s.pages[page].data)
		s.pages[page].data = append(s.pages[page].data, key...)
	}
	s.keyBytes += len(key)
	if s.n == len(s.ents)*pkEntPage {
		s.ents = append(s.ents, make([]pkEnt, pkEntPage))
	}
	e = s.ent(i)
	e.set(row, true)
	e.loc = uint64(page)<<40 | uint64(off)<<20 | uint64(n)
	s.n++
	return e, false
}

// put sets the entry of a whole key.
func (s *pkSet) put(t *TableDesc, key []byte, row uint64, present bool) {
	e, _ := s.add(s.table(t), key[pkPrefixLen:], row)
	e.set(row, present)
}

// grow doubles the slots; the tags they keep place the entries again
// without their keys.
func (s *pkSet) grow() {
	if s.slots == nil {
		s.seed = maphash.MakeSeed()
	}
	old := s.slots
	s.slots = make([]uint64, max(2*len(old), 1024))
	mask := len(s.slots) - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := int(v>>32) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = v
	}
}

// each calls fn with every entry and its whole key, in the order they
// were added; the key is valid during the call.
func (s *pkSet) each(fn func(key []byte, e pkEntry) error) error {
	for i := range s.n {
		e := s.ent(i)
		t := s.tables[s.tableOfEnt(i)].t
		s.key = append(binary.BigEndian.AppendUint64(append(s.key[:0], 't'), t.ID), tagPK)
		s.key = append(s.key, s.keyOf(i)...)
		if err := fn(s.key, pkEntry{table: t, row: e.row(), present: e.present()}); err != nil {
			return err
		}
	}
	return nil
}

// pkProbe is a key of an insert to look for among the committed ones:
// keys[start:end] of row.
type pkProbe struct {
	start, end, row int
}

// addKeys adds the primary key entries of rows, row i held by id(i). It
// fails with 23505 at the first row whose key a row the txn can see
// holds: one of its own inserts (an earlier row of rows too), or a
// committed row it did not delete. The keys the txn has no entry for are
// looked for among the committed ones together, in key order, with one
// iterator: a load into a new table, or past its keys, costs one seek.
func (txn *Txn) addKeys(t *TableDesc, tt *txnTable, rows *types.Batch, id func(int) uint64) error {
	n := rows.Len()
	ti := txn.pk.table(t)
	keys, probes := txn.pkKeys[:0], txn.pkProbes[:0]
	bad := n
	for i := range n {
		start := len(keys)
		keys = appendPKKey(keys, t, rows, i)
		e, found := txn.pk.add(ti, keys[start+pkPrefixLen:], id(i))
		switch {
		case !found:
			probes = append(probes, pkProbe{start: start, end: len(keys), row: i})
			continue
		case e.present():
			bad = i
		default: // the txn deleted the key: it is free
			e.set(id(i), true)
			continue
		}
		break
	}
	txn.pkKeys, txn.pkProbes = keys, probes
	if len(probes) > 0 {
		first, err := txn.probeKeys(t, tt, keys, probes)
		if err != nil {
			return err
		}
		bad = min(bad, first)
	}
	if bad < n {
		return uniqueViolation(t, rows, bad)
	}
	return nil
}

// probeKeys returns the first row of probes whose key a committed row
// holds that the txn did not delete, or MaxInt. It sorts probes.
func (txn *Txn) probeKeys(t *TableDesc, tt *txnTable, keys []byte, probes []pkProbe) (int, error) {
	if !txn.checked {
		txn.checked = true
		txn.checkedAt = txn.db.pkSeq.Load()
	}
	cmp := func(a, b pkProbe) int { return bytes.Compare(keys[a.start:a.end], keys[b.start:b.end]) }
	if !slices.IsSortedFunc(probes, cmp) {
		slices.SortFunc(probes, cmp)
	}
	lo, hi := probes[0], probes[len(probes)-1]
	// The least key past the last one bounds the iterator.
	txn.pkUpper = append(append(txn.pkUpper[:0], keys[hi.start:hi.end]...), 0)
	it, err := txn.db.kv.NewIter(&pebble.IterOptions{LowerBound: keys[lo.start:lo.end], UpperBound: txn.pkUpper})
	if err != nil {
		return 0, ioErrorf(err, "reading primary keys")
	}
	first := math.MaxInt
	valid := it.First()
	for _, p := range probes {
		key := keys[p.start:p.end]
		if valid && bytes.Compare(it.Key(), key) < 0 {
			valid = it.SeekGE(key)
		}
		var row uint64
		var found bool
		switch {
		case valid && bytes.Equal(it.Key(), key):
			v, verr := it.ValueAndErr()
			switch {
			case verr != nil:
				err = ioErrorf(verr, "reading primary key")
			case len(v) == 8:
				row, found = binary.BigEndian.Uint64(v), true
			case len(v) != 0: // empty: a branch's deleted key
				err = corruptionf("primary key entry: %d-byte value", len(v))
			}
		case t.Branch != "":
			row, found, err = txn.db.branchPK(t, key)
		}
		if err != nil {
			break
		}
		if _, gone := tt.deleted[row]; found && !gone {
			first = min(first, p.row)
		}
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = ioErrorf(cerr, "reading primary keys")
	}
	return first, err
}

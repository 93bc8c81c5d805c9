package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// pkKey returns the whole primary key entry key of an int8 key v of t.
func pkKey(t *TableDesc, v int64) []byte {
	b := types.NewBatch([]types.Type{types.TypInt8}, 1)
	b.Cols[0].AppendInt(v)
	return appendPKKey(nil, &TableDesc{ID: t.ID, PrimaryKey: []int{0}}, b, 0)
}

// A pkSet answers as a map keyed by the whole key does, for keys that
// ascend, descend, come in random order or partly ordered, of two
// tables, and lists its entries in the order they were first written.
func TestPKSetModel(t *testing.T) {
	type entry struct {
		table   *TableDesc
		row     uint64
		present bool
	}
	tables := []*TableDesc{{ID: 7, Name: "a"}, {ID: 9, Name: "b"}}
	rng := rand.New(rand.NewPCG(5, 6))
	orders := map[string]func(i int) int64{
		"ascending":  func(i int) int64 { return int64(i) },
		"descending": func(i int) int64 { return int64(-i) },
		"random":     func(int) int64 { return rng.Int64N(3000) },
		"partly":     func(i int) int64 { return int64(i/4*4 + 3 - i%4) },
		"repeated":   func(i int) int64 { return int64(i % 50) },
	}
	for name, key := range orders {
		t.Run(name, func(t *testing.T) {
			var s pkSet
			model := map[string]entry{}
			var order []string
			for i := range 20000 {
				tbl := tables[rng.IntN(len(tables))]
				k := pkKey(tbl, key(i))
				want, had := model[string(k)]
				got, ok := s.get(k)
				if ok != had || ok && (got.table.ID != want.table.ID || got.row != want.row || got.present != want.present) {
					t.Fatalf("get %x: %v %v, want %v %v", k, got, ok, want, had)
				}
				switch op := rng.IntN(10); {
				case op < 7:
					e, found := s.add(s.table(tbl), k[pkPrefixLen:], uint64(i))
					if found != had {
						t.Fatalf("add %x: found %v, want %v", k, found, had)
					}
					if !found {
						model[string(k)] = entry{tbl, uint64(i), true}
						order = append(order, string(k))
					} else if e.row() != want.row || e.present() != want.present {
						t.Fatalf("add %x: %d %v, want %v", k, e.row(), e.present(), want)
					}
				default:
					s.put(tbl, k, uint64(i), op == 9)
					if !had {
						order = append(order, string(k))
					}
					model[string(k)] = entry{tbl, uint64(i), op == 9}
				}
			}
			if s.len() != len(model) {
				t.Fatalf("%d entries, want %d", s.len(), len(model))
			}
			var keys []string
			err := s.each(func(k []byte, e pkEntry) error {
				keys = append(keys, string(k))
				if want := model[string(k)]; e.table.ID != want.table.ID || e.row != want.row || e.present != want.present {
					return fmt.Errorf("entry %x: %v, want %v", k, e, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, order) {
				t.Fatal("entries not in the order they were written")
			}
		})
	}
}

// int8Rows returns rows of the table (id int8 primary key, v int8) with
// the given ids.
func int8Rows(t *TableDesc, ids ...int64) *types.Batch {
	b := types.NewBatch(t.ColumnTypes(), len(ids))
	for _, id := range ids {
		b.Cols[0].AppendInt(id)
		b.Cols[1].AppendInt(id * 10)
	}
	return b
}

// An insert's keys are checked together, and the 23505 error names the
// first row whose key is taken: by an earlier row of the batch, by one of
// the txn's own inserts, or by a committed row the txn did not delete.
func TestInsertKeysFirstViolation(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, &TableDesc{Name: "t", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypInt8}}, PrimaryKey: []int{0}})
	insert(t, db, tbl, int8Rows(tbl, 10, 20, 30, 40, 50))
	for _, tc := range []struct {
		name string
		ids  []int64
		want string // the key of the failing row, or "" for none
	}{
		{"new keys around committed ones", []int64{45, 5, 25, 55, 15, 35}, ""},
		{"committed, unsorted", []int64{45, 5, 30, 55, 15}, "30"},
		{"committed before a repeat", []int64{1, 40, 2, 1}, "40"},
		{"repeat before committed", []int64{1, 2, 1, 40}, "1"},
		{"committed first of several", []int64{60, 50, 10, 20}, "50"},
		{"past every committed key", []int64{100, 101, 102}, ""},
	} {
		txn := db.Begin()
		err := txn.Insert(tbl, int8Rows(tbl, tc.ids...))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		} else if pe := wantCode(t, err, pgerror.UniqueViolation); pe.Detail != "Key (id)=("+tc.want+") already exists." {
			t.Errorf("%s: %s", tc.name, pe.Detail)
		}
		txn.Rollback()
	}

	// A committed key the txn deleted is free, once.
	rows, ids := scanAll(t, db, nil, tbl, []int{0})
	txn := db.Begin()
	defer txn.Rollback()
	for i, r := range rows {
		if r[0] == int64(20) {
			if err := txn.Delete(tbl, []uint64{ids[i]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := txn.Insert(tbl, int8Rows(tbl, 21, 20, 22)); err != nil {
		t.Fatal(err)
	}
	pe := wantCode(t, txn.Insert(tbl, int8Rows(tbl, 23, 20)), pgerror.UniqueViolation)
	if pe.Detail != "Key (id)=(20) already exists." {
		t.Fatal(pe.Detail)
	}
}

// Inserting rows allocates per batch, not per row: the keys, their
// entries and the committed keys' look-up reuse their buffers.
func TestInsertKeysAllocs(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, &TableDesc{Name: "t", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypInt8}}, PrimaryKey: []int{0}})
	insert(t, db, tbl, int8Rows(tbl, -1))
	txn := db.Begin()
	defer txn.Rollback()
	const n = 1000
	b := int8Rows(tbl, make([]int64, n)...)
	next := int64(0)
	ins := func() {
		for i := range n {
			b.Cols[0].Ints[i] = next
			next++
		}
		if err := txn.Insert(tbl, b); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		ins()
	}
	if a := testing.AllocsPerRun(50, ins); a > 4 {
		t.Errorf("%v allocations to insert %d rows", a, n)
	}
}

func BenchmarkInsertKeys(b *testing.B) {
	db := openMem(b, 1<<30)
	tbl := createTable(b, db, &TableDesc{Name: "t", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypInt8}}, PrimaryKey: []int{0}})
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
			const n = 1000
			rows := int8Rows(tbl, make([]int64, n)...)
			rng := rand.New(rand.NewPCG(1, 1))
			txn := db.Begin()
			defer txn.Rollback()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for j := range n {
					k := int64(i*n + j)
					if order == "random" {
						k = rng.Int64()
					}
					rows.Cols[0].Ints[j] = k
				}
				if err := txn.Insert(tbl, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Keys of every length, up to pages of their own, and of two tables,
// come back whole and tell their table.
func TestPKSetLongKeys(t *testing.T) {
	var s pkSet
	tables := []*TableDesc{{ID: 1}, {ID: 2}}
	var keys [][]byte
	for i, n := range []int{0, 1, 5, pkWholePage - 1, pkWholePage, pkWholePage + 1, 3 << 20, 7, pkPageSize - 3, 2} {
		tbl := tables[i%2]
		k := binary.BigEndian.AppendUint64([]byte{'t'}, tbl.ID)
		k = append(k, tagPK)
		for j := range n {
			k = append(k, byte(i+j))
		}
		if _, found := s.add(s.table(tbl), k[pkPrefixLen:], uint64(i)); found {
			t.Fatalf("key %d found before it was added", i)
		}
		keys = append(keys, k)
	}
	for i, k := range keys {
		if e, ok := s.get(k); !ok || e.row != uint64(i) || e.table.ID != tables[i%2].ID || !e.present {
			t.Errorf("key %d (%d bytes): %+v, %v", i, len(k), e, ok)
		}
	}
	i := 0
	_ = s.each(func(k []byte, e pkEntry) error {
		if !bytes.Equal(k, keys[i]) || e.table.ID != tables[i%2].ID {
			t.Errorf("entry %d: %d bytes of table %d", i, len(k), e.table.ID)
		}
		i++
		return nil
	})
}

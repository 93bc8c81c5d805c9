package exec

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// TestSystemTablesAreWellFormed scans every system table over a catalog
// with a table of each kind of column and checks that each row has a value
// of the declared type in every column.
func TestSystemTablesAreWellFormed(t *testing.T) {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := &storage.TableDesc{Name: "things", PrimaryKey: []int{0}, Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8, Serial: true, NotNull: true},
		{Name: "label", Type: types.Type{Kind: types.Varchar, Width: 20}, Default: "'x'"},
		{Name: "emb", Type: types.VectorOf(3)},
		{Name: "img", Type: types.TensorOf(types.DTUint8, 2, 2)},
	}}
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRole("alice", true, false, nil); err != nil {
		t.Fatal(err)
	}
	env := &Env{DB: db, User: "alice", Database: "db",
		Setting:  func(string) (string, bool) { return "on", true },
		Settings: func() []SettingRow { return []SettingRow{{Name: "a", Value: "b"}} }}
	for _, st := range plan.SysTables {
		cols := make([]int, len(st.Cols))
		for i := range cols {
			cols[i] = i
		}
		op, err := newSysScan(env, &plan.SysScan{Table: st, Cols: cols})
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		b, err := op.Next()
		if err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		n := b.Len()
		for i, c := range b.Cols {
			if c.Len() != n {
				t.Errorf("%s.%s: %d values, want %d", st.Name, st.Cols[i].Name, c.Len(), n)
			}
			if !c.Type.Equal(st.Cols[i].Type) {
				t.Errorf("%s.%s: type %s, want %s", st.Name, st.Cols[i].Name, c.Type, st.Cols[i].Type)
			}
			var got int
			switch c.Type.Phys() {
			case types.PhysInt:
				got = len(c.Ints)
			case types.PhysFloat:
				got = len(c.Floats)
			case types.PhysBool:
				got = len(c.Bools)
			default:
				got = len(c.Bytes.Offsets) - 1
			}
			if got != n {
				t.Errorf("%s.%s: %d values in the %v slice, want %d", st.Name, st.Cols[i].Name, got, c.Type.Phys(), n)
				continue
			}
			for r := 0; r < c.Len(); r++ {
				if !c.Nulls[r] {
					types.AppendText(nil, c, r) // must not panic
				}
			}
		}
		op.Close()
	}
}

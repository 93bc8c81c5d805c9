package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// The version model: every branch's rows as a map from key to value, with
// the history of each branch (its state after every operation), forks,
// commits and merges, and a three-way merge by key over the merge base
// the storage picks (the state one side absorbed from the other in their
// last merge, else their common ancestor).

type modelState map[int64]int64

type modelBranch struct {
	name   string
	parent *modelBranch
	fork   int // the time the branch forked at, in its parent's history
	hist   []modelSnap
}

type modelSnap struct {
	time  int
	state modelState
}

func (b *modelBranch) head() modelState { return b.hist[len(b.hist)-1].state }

// at returns the branch's state at time t.
func (b *modelBranch) at(t int) modelState {
	s := b.hist[0].state
	for _, h := range b.hist {
		if h.time > t {
			break
		}
		s = h.state
	}
	return s
}

// chain returns the branch's layers, root first: each branch and the time
// up to which the view reads it.
func (b *modelBranch) chain(now int) []modelLayer {
	if b.parent == nil {
		return []modelLayer{{b, now}}
	}
	c := b.parent.chain(b.fork)
	return append(c, modelLayer{b, now})
}

type modelLayer struct {
	b *modelBranch
	t int
}

type modelMerge struct {
	into, from *modelBranch
	absorbed   modelState
}

type versionModel struct {
	now      int
	branches map[string]*modelBranch
	commits  map[string]modelState
	commitAt map[string]modelLayer
	merges   []modelMerge
}

func (m *versionModel) set(b *modelBranch, s modelState) {
	m.now++
	b.hist = append(b.hist, modelSnap{m.now, s})
}

// base returns the merge base of merging from into into.
func (m *versionModel) base(into, from *modelBranch) modelState {
	for i := len(m.merges) - 1; i >= 0; i-- {
		mg := m.merges[i]
		if mg.into == into && mg.from == from || mg.into == from && mg.from == into {
			return mg.absorbed
		}
	}
	ca, cb := into.chain(m.now), from.chain(m.now)
	k := 0
	for k < len(ca) && k < len(cb) && ca[k].b == cb[k].b && ca[k].t == cb[k].t {
		k++
	}
	if k < len(ca) && k < len(cb) && ca[k].b == cb[k].b {
		return ca[k].b.at(min(ca[k].t, cb[k].t))
	}
	if k == 0 {
		return modelState{}
	}
	return ca[k-1].b.at(ca[k-1].t)
}

// merge merges from into into by key; it reports a conflict (and changes
// nothing) under "fail".
func (m *versionModel) merge(into, from *modelBranch, strategy string) bool {
	base, t, s := m.base(into, from), into.head(), from.head()
	out := maps.Clone(t)
	keys := map[int64]bool{}
	for _, st := range []modelState{base, t, s} {
		for k := range st {
			keys[k] = true
		}
	}
	conflict := false
	for k := range keys {
		bv, bok := base[k]
		tv, tok := t[k]
		sv, sok := s[k]
		sChanged := sok != bok || sv != bv
		tChanged := tok != bok || tv != bv
		if !sChanged || tok == sok && tv == sv {
			continue
		}
		if tChanged {
			conflict = true
			if strategy != "theirs" {
				continue
			}
		}
		if sok {
			out[k] = sv
		} else {
			delete(out, k)
		}
	}
	if conflict && strategy == "fail" {
		return true
	}
	m.set(into, out)
	m.merges = append(m.merges, modelMerge{into, from, maps.Clone(s)})
	return false
}

// TestVersionModel runs random inserts, updates, deletes, commits, tags,
// branches, merges, resets and VACUUMs against a table and the model, and
// checks every branch and every commit against it, for several seeds.
func TestVersionModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runVersionModel(t, seed) })
	}
}

func runVersionModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	db, err := Open(Options{InMemory: true, FlushRows: 1 + rng.IntN(40), VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, &TableDesc{Name: "m", Columns: []ColumnDesc{
		{Name: "k", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypInt8}}, PrimaryKey: []int{0}})
	m := &versionModel{branches: map[string]*modelBranch{}, commits: map[string]modelState{}, commitAt: map[string]modelLayer{}}
	main := &modelBranch{name: MainBranch, hist: []modelSnap{{0, modelState{}}}}
	m.branches[MainBranch] = main
	view := func(name string) *TableDesc {
		d, err := db.postgres().Branch(tbl, name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	read := func(d *TableDesc) (modelState, map[int64]uint64) {
		txn := db.Begin()
		defer txn.Rollback()
		rows, ids := scanAll(t, db, txn, d, []int{0, 1})
		st, byKey := modelState{}, map[int64]uint64{}
		for i, r := range rows {
			k := r[0].(int64)
			if _, dup := st[k]; dup {
				t.Fatalf("key %d twice in %s", k, d.Branch)
			}
			st[k], byKey[k] = r[1].(int64), ids[i]
		}
		return st, byKey
	}
	rowsOf := func(kv ...int64) *types.Batch {
		b := types.NewBatch(tbl.ColumnTypes(), len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			b.Cols[0].AppendInt(kv[i])
			b.Cols[1].AppendInt(kv[i+1])
		}
		b.SetLen(len(kv) / 2)
		return b
	}
	names := func() []string { return slices.Sorted(maps.Keys(m.branches)) }
	pick := func() *modelBranch { n := names(); return m.branches[n[rng.IntN(len(n))]] }
	check := func(when string) {
		t.Helper()
		for _, name := range names() {
			got, _ := read(view(name))
			if want := m.branches[name].head(); !maps.Equal(got, want) {
				t.Fatalf("%s: branch %s reads %v, want %v", when, name, got, want)
			}
		}
		for id, want := range m.commits {
			d, err := db.postgres().View("m@"+id, "")
			if err != nil {
				t.Fatalf("%s: commit %s: %v", when, id, err)
			}
			if got, _ := read(d); !maps.Equal(got, want) {
				t.Fatalf("%s: commit %s reads %v, want %v", when, id, got, want)
			}
		}
	}
	nextBranch := 0
	ops := map[string]int{}
	defer func() { t.Logf("seed %d: %v", seed, ops) }()
	for step := range 150 {
		b := pick()
		d := view(b.name)
		op := rng.IntN(100)
		what := ""
		switch {
		case op < 30: // write: inserts, updates and deletes in one txn
			what = "write " + b.name
			cur, byKey := read(d)
			next := maps.Clone(cur)
			txn := db.Begin()
			var ins []int64
			var dels []uint64
			var delRows []int64
			for range 1 + rng.IntN(6) {
				k := int64(rng.IntN(40))
				v := int64(rng.IntN(1000))
				if _, ok := next[k]; ok {
					if _, was := cur[k]; !was || slices.Contains(delRows, k) {
						continue // touched in this txn already
					}
					dels = append(dels, byKey[k])
					delRows = append(delRows, k, cur[k])
					if rng.IntN(2) == 0 {
						delete(next, k)
						continue
					}
				} else if _, was := cur[k]; was {
					continue
				}
				next[k] = v
				ins = append(ins, k, v)
			}
			if len(dels) > 0 {
				if err := txn.DeleteRows(d, dels, rowsOf(delRows...)); err != nil {
					t.Fatal(err)
				}
			}
			if len(ins) > 0 {
				if err := txn.Insert(d, rowsOf(ins...)); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			what += fmt.Sprintf(" ins %v dels %v (ids %v)", ins, delRows, dels)
			m.set(b, next)
		case op < 45:
			what = "commit " + b.name
			txn := db.Begin()
			id, err := txn.CommitVersion(d, "c", "model")
			txn.Rollback()
			if err != nil {
				t.Fatal(err)
			}
			m.commits[id] = b.head()
			m.commitAt[id] = modelLayer{b, m.now}
		case op < 55 && len(m.branches) < 6:
			nextBranch++
			name := fmt.Sprintf("b%d", nextBranch)
			nb := &modelBranch{name: name, parent: b, fork: m.now}
			from := ""
			if rng.IntN(3) == 0 {
				// From a commit of b, if it has one.
				for _, id := range slices.Sorted(maps.Keys(m.commitAt)) {
					if c := m.commitAt[id]; c.b == b {
						from, nb.fork = id, c.t
					}
				}
			}
			what = "branch " + name + " from " + b.name + "@" + from
			txn := db.Begin()
			_, err := txn.CreateBranch(tbl, name, refOr(from, b.name), "model")
			txn.Rollback()
			if err != nil {
				t.Fatal(err)
			}
			nb.hist = []modelSnap{{m.now, maps.Clone(b.at(nb.fork))}}
			m.branches[name] = nb
		case op < 75 && len(m.branches) > 1:
			from := pick()
			if from == b {
				continue
			}
			strategy := []string{"fail", "ours", "theirs"}[rng.IntN(3)]
			what = "merge " + from.name + " into " + b.name + " " + strategy
			st := map[string]MergeStrategy{"fail": MergeFail, "ours": MergeOurs, "theirs": MergeTheirs}[strategy]
			_, _, err := db.Merge(d, view(from.name), st, "model", "", nil)
			conflict := m.merge(b, from, strategy)
			if conflict {
				ops["conflict"]++
			}
			var pe *pgerror.Error
			switch {
			case conflict && (err == nil || !errors.As(err, &pe) || pe.Code != pgerror.SerializationFailure):
				t.Fatalf("step %d %s: the model has a conflict, the merge: %v", step, what, err)
			case !conflict && err != nil:
				t.Fatalf("step %d %s: %v", step, what, err)
			}
		case op < 82 && len(m.commits) > 0:
			ids := slices.Sorted(maps.Keys(m.commits))
			id := ids[rng.IntN(len(ids))]
			what = "reset " + b.name + " to " + id
			to, err := db.postgres().View("m@"+id, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := db.Reset(d, to, "model", "", nil); err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			m.set(b, maps.Clone(m.commits[id]))
		case op < 88:
			what = "vacuum"
			if err := db.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Vacuum(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
		default:
			continue
		}
		ops[strings.Fields(what)[0]]++
		if strings.HasPrefix(what, "merge") {
			ops[what[strings.LastIndexByte(what, ' ')+1:]]++
		}
		check(fmt.Sprintf("seed %d step %d (%s)", seed, step, what))
	}
}

func refOr(ref, branch string) string {
	if ref != "" {
		return ref
	}
	return branch
}

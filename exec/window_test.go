package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// windowRows runs a Window over rows (grp, v) sorted by grp, v and returns
// each output row as "grp v call..." lines.
func windowRows(t *testing.T, rows [][2]int64, orderBy bool, calls ...plan.WindowCall) string {
	t.Helper()
	vals := &plan.Values{Cols: []plan.Column{{Name: "grp", Type: types.TypInt4, Ordinal: -1}, {Name: "v", Type: types.TypInt8, Ordinal: -1}}}
	for _, r := range rows {
		vals.Rows = append(vals.Rows, []plan.Expr{plan.IntConst(types.TypInt4, r[0]), plan.IntConst(types.TypInt8, r[1])})
	}
	w := &plan.Window{Input: &plan.Sort{Input: vals, Keys: []plan.SortKey{{Col: 0}, {Col: 1}}}, PartitionBy: []int{0}, Calls: calls}
	if orderBy {
		w.OrderBy = []plan.SortKey{{Col: 1}}
	}
	op, err := Build(&Env{Ctx: context.Background()}, w)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	var out []string
	err = Drain(op, func(b *types.Batch) error {
		for i := 0; i < b.Len(); i++ {
			var f []string
			for _, c := range b.Cols {
				if c.Nulls[i] {
					f = append(f, "NULL")
				} else {
					f = append(f, string(types.AppendText(nil, c, i)))
				}
			}
			out = append(out, strings.Join(f, " "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

func TestWindowFunctions(t *testing.T) {
	rows := [][2]int64{{1, 10}, {2, 5}, {1, 20}, {1, 20}, {2, 7}, {1, 30}}
	call := func(f plan.WindowFunc, arg int, typ types.Type) plan.WindowCall {
		return plan.WindowCall{Func: f, Arg: arg, Default: -1, Typ: typ, Offset: 1}
	}
	got := windowRows(t, rows, true,
		call(plan.WinRowNumber, -1, types.TypInt8),
		call(plan.WinRank, -1, types.TypInt8),
		call(plan.WinDenseRank, -1, types.TypInt8),
		call(plan.WinSum, 1, types.TypInt8),
		call(plan.WinCount, -1, types.TypInt8),
		call(plan.WinLag, 1, types.TypInt8),
		call(plan.WinLead, 1, types.TypInt8),
		call(plan.WinLastValue, 1, types.TypInt8),
		call(plan.WinMax, 1, types.TypInt8),
	)
	// PostgreSQL 15 gives the same for
	//   SELECT grp, v, row_number() OVER w, rank() OVER w, dense_rank() OVER w,
	//     sum(v) OVER w, count(*) OVER w, lag(v) OVER w, lead(v) OVER w,
	//     last_value(v) OVER w, max(v) OVER w
	//   FROM t WINDOW w AS (PARTITION BY grp ORDER BY v)
	want := strings.Join([]string{
		"1 10 1 1 1 10 1 NULL 20 10 10",
		"1 20 2 2 2 50 3 10 20 20 20",
		"1 20 3 2 2 50 3 20 30 20 20",
		"1 30 4 4 3 80 4 20 NULL 30 30",
		"2 5 1 1 1 5 1 NULL 7 5 5",
		"2 7 2 2 2 12 2 5 NULL 7 7",
	}, "\n")
	if got != want {
		t.Fatalf("ordered window:\n%s\nwant:\n%s", got, want)
	}
	// Without ORDER BY every row sees its whole partition.
	got = windowRows(t, rows, false, call(plan.WinSum, 1, types.TypInt8), call(plan.WinAvg, 1, types.TypFloat8),
		call(plan.WinRowNumber, -1, types.TypInt8))
	want = strings.Join([]string{
		"1 10 80 20 1", "1 20 80 20 2", "1 20 80 20 3", "1 30 80 20 4", "2 5 12 6 1", "2 7 12 6 2",
	}, "\n")
	if got != want {
		t.Fatalf("unordered window:\n%s\nwant:\n%s", got, want)
	}
	nt := call(plan.WinNtile, -1, types.TypInt4)
	nt.Offset = 3
	got = windowRows(t, [][2]int64{{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {1, 7}}, true, nt)
	if want := "1 1 1\n1 2 1\n1 3 1\n1 4 2\n1 5 2\n1 6 3\n1 7 3"; got != want {
		t.Fatalf("ntile(3):\n%s\nwant:\n%s", got, want)
	}
	if got := windowRows(t, nil, true, call(plan.WinRowNumber, -1, types.TypInt8)); got != "" {
		t.Fatalf("empty input: %q", got)
	}
}

// TestWindowPartitionMemoryBound: one partition past maxBuildBytes fails
// with 53200 instead of growing without bound.
func TestWindowPartitionMemoryBound(t *testing.T) {
	defer func(old int64) { maxBuildBytes = old }(maxBuildBytes)
	maxBuildBytes = 1 << 10
	vals := &plan.Values{Cols: []plan.Column{{Name: "grp", Type: types.TypInt4, Ordinal: -1}, {Name: "v", Type: types.TypInt8, Ordinal: -1}}}
	for i := range 3000 {
		vals.Rows = append(vals.Rows, []plan.Expr{plan.IntConst(types.TypInt4, 1), plan.IntConst(types.TypInt8, int64(i))})
	}
	w := &plan.Window{Input: vals, PartitionBy: []int{0},
		Calls: []plan.WindowCall{{Func: plan.WinRowNumber, Arg: -1, Default: -1, Typ: types.TypInt8, Offset: 1}}}
	op, err := Build(&Env{Ctx: context.Background()}, w)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if _, err := op.Next(); pgerror.GetCode(err) != pgerror.OutOfMemory {
		t.Fatalf("got %v, want 53200", err)
	}
}

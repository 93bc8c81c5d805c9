package plan

import "github.com/deeplaked/deeplaked/types"

// WindowFunc names a window function.
type WindowFunc uint8

// Window functions: the ranking ones, lag/lead and first/last_value, and
// the aggregates over a window frame.
const (
	WinRowNumber WindowFunc = iota + 1
	WinRank
	WinDenseRank
	WinPercentRank
	WinCumeDist
	WinNtile
	WinLag
	WinLead
	WinFirstValue
	WinLastValue
	WinCount // count(arg); count(*) when Arg < 0
	WinSum
	WinAvg
	WinMin
	WinMax
)

// WindowCall is one window function of a Window node.
type WindowCall struct {
	Func WindowFunc
	// Arg is the input column of the argument, -1 for none.
	Arg int
	// Offset is lag/lead's offset or ntile's bucket count.
	Offset int64
	// Default is the input column of lag/lead's default, -1 for NULL.
	Default int
	Typ     types.Type
	Name    string
}

// Window computes window functions over the partitions of its input, which
// arrives sorted by PartitionBy and then OrderBy (the binder puts a Sort
// below it). Without OrderBy every function sees its whole partition; with
// it, the frame is PostgreSQL's default: from the partition's start to the
// current row's last peer. Its output is the input's columns followed by
// one column per call.
type Window struct {
	Input       Node
	PartitionBy []int
	OrderBy     []SortKey
	Calls       []WindowCall
	// WholeFrame makes every row's frame its whole partition, ORDER BY or
	// not (ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING).
	WholeFrame bool
}

// Columns returns the input's columns and the calls'.
func (n *Window) Columns() []Column {
	cols := append([]Column{}, n.Input.Columns()...)
	for _, c := range n.Calls {
		cols = append(cols, Column{Name: c.Name, Type: c.Typ, Ordinal: -1})
	}
	return cols
}

// PartitionTopK passes on, of each partition of its input (rows of equal
// PartitionBy values, NULLs equal), only the first rows in OrderBy order
// (then input order) whose Func would be at most Count: the first Count
// for WinRowNumber, those and the last one's peers for WinRank, the rows
// of the first Count peer groups for WinDenseRank. The planner puts it
// under the Sort of a Window whose filter keeps no row past them, so the
// window is computed over each partition's first rows only. Its rows come
// out in input order.
type PartitionTopK struct {
	Input       Node
	PartitionBy []int
	OrderBy     []SortKey
	Func        WindowFunc
	Count       int64
}

// Columns returns the input's columns.
func (n *PartitionTopK) Columns() []Column { return n.Input.Columns() }

package exec

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// windowOp computes window functions one partition at a time: it gathers
// the rows of a partition (its input is sorted by the partition keys, then
// the order keys), computes every call over them and emits them.
type windowOp struct {
	env *Env
	in  Operator
	n   *plan.Window
	// part holds the rows of the partition being gathered; next holds the
	// first row of the following partition once it is seen.
	part, next *types.Batch
	out        *types.Batch
	inBatch    *types.Batch
	inPos      int
	done       bool
	// acc holds what the partition and its output take.
	acc *MemAccount
}

func newWindow(env *Env, n *plan.Window) (Operator, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	return windowOver(env, n, in), nil
}

// windowOver returns n's operator over in, the operator of n.Input.
func windowOver(env *Env, n *plan.Window, in Operator) *windowOp {
	var ts []types.Type
	for _, c := range n.Input.Columns() {
		ts = append(ts, c.Type)
	}
	outTs := append([]types.Type{}, ts...)
	for _, c := range n.Calls {
		outTs = append(outTs, c.Typ)
	}
	return &windowOp{env: env, in: in, n: n, part: types.NewBatch(ts, types.BatchSize), out: types.NewBatch(outTs, types.BatchSize),
		acc: env.account("a window partition")}
}

func (w *windowOp) Close() {
	w.in.Close()
	w.acc.Close()
}

// Next returns the next partition, with the calls' columns.
func (w *windowOp) Next() (*types.Batch, error) {
	if w.done {
		return nil, nil
	}
	w.part.Reset()
	for {
		if w.inBatch == nil || w.inPos >= w.inBatch.Len() {
			b, err := w.in.Next()
			if err != nil {
				return nil, err
			}
			if err := w.env.canceled(); err != nil {
				return nil, err
			}
			if heldBytes(w.part) > maxBuildBytes {
				return nil, tooMuchMemory("a window partition")
			}
			// The partition is copied into the output with its calls'
			// columns: both count.
			if err := w.acc.Resize(2*batchBytes(w.part) + batchBytes(w.out)); err != nil {
				return nil, err
			}
			if b == nil {
				w.done = true
				break
			}
			w.inBatch, w.inPos = b, 0
			continue
		}
		i := w.inPos
		if w.part.Len() > 0 && !w.samePartition(w.part, w.part.Len()-1, w.inBatch, i) {
			break
		}
		for c, v := range w.inBatch.Cols {
			w.part.Cols[c].AppendFrom(v, i)
		}
		w.inPos++
	}
	n := w.part.Len()
	if n == 0 {
		return nil, nil
	}
	w.out.Reset()
	for c, v := range w.part.Cols {
		w.out.Cols[c].AppendVec(v)
	}
	base := len(w.part.Cols)
	for k, call := range w.n.Calls {
		if err := w.compute(call, w.out.Cols[base+k], n); err != nil {
			return nil, err
		}
	}
	w.out.SetLen(n)
	return w.out, nil
}

// samePartition reports whether row i of a and row j of b have equal
// partition keys.
func (w *windowOp) samePartition(a *types.Batch, i int, b *types.Batch, j int) bool {
	for _, c := range w.n.PartitionBy {
		if !equalAt(a.Cols[c], i, b.Cols[c], j) {
			return false
		}
	}
	return true
}

// peers reports whether rows i and j of the partition are equal in the
// order keys.
func (w *windowOp) peers(i, j int) bool {
	for _, k := range w.n.OrderBy {
		if !equalAt(w.part.Cols[k.Col], i, w.part.Cols[k.Col], j) {
			return false
		}
	}
	return true
}

// equalAt reports whether two values are equal, NULLs equal to each other
// (as grouping and partitioning treat them).
func equalAt(x *types.Vec, i int, y *types.Vec, j int) bool {
	if x.Nulls[i] || y.Nulls[j] {
		return x.Nulls[i] && y.Nulls[j]
	}
	return compareAt(x, i, y, j) == 0
}

// frameEnd returns the end (exclusive) of row i's frame: the partition's
// end without ORDER BY, else one past i's last peer.
func (w *windowOp) frameEnd(i, n int) int {
	if len(w.n.OrderBy) == 0 || w.n.WholeFrame {
		return n
	}
	e := i + 1
	for e < n && w.peers(i, e) {
		e++
	}
	return e
}

// compute appends call's value for each of the partition's n rows to dst.
func (w *windowOp) compute(call plan.WindowCall, dst *types.Vec, n int) error {
	var arg *types.Vec
	if call.Arg >= 0 {
		arg = w.part.Cols[call.Arg]
	}
	switch call.Func {
	case plan.WinRowNumber:
		for i := 0; i < n; i++ {
			dst.AppendInt(int64(i + 1))
		}
	case plan.WinRank, plan.WinDenseRank, plan.WinPercentRank:
		rank, dense := 1, 1
		for i := 0; i < n; i++ {
			if i > 0 && !w.peers(i-1, i) {
				rank, dense = i+1, dense+1
			}
			switch call.Func {
			case plan.WinRank:
				dst.AppendInt(int64(rank))
			case plan.WinDenseRank:
				dst.AppendInt(int64(dense))
			default:
				if n == 1 {
					dst.AppendFloat(0)
				} else {
					dst.AppendFloat(float64(rank-1) / float64(n-1))
				}
			}
		}
	case plan.WinCumeDist:
		for i := 0; i < n; i++ {
			dst.AppendFloat(float64(w.frameEnd(i, n)) / float64(n))
		}
	case plan.WinNtile:
		if call.Offset <= 0 {
			return pgerror.New(pgerror.Code("22014"), "argument of ntile must be greater than zero")
		}
		buckets := int(min(call.Offset, int64(n)))
		size, extra := n/buckets, n%buckets
		b, left := 1, size
		if extra > 0 {
			left++
		}
		for i := 0; i < n; i++ {
			if left == 0 {
				b++
				left = size
				if b <= extra {
					left++
				}
			}
			dst.AppendInt(int64(b))
			left--
		}
	case plan.WinLag, plan.WinLead:
		for i := 0; i < n; i++ {
			j := i - int(call.Offset)
			if call.Func == plan.WinLead {
				j = i + int(call.Offset)
			}
			switch {
			case j >= 0 && j < n:
				dst.AppendFrom(arg, j)
			case call.Default >= 0:
				dst.AppendFrom(w.part.Cols[call.Default], i)
			default:
				dst.AppendNull()
			}
		}
	case plan.WinFirstValue:
		for i := 0; i < n; i++ {
			dst.AppendFrom(arg, 0)
		}
	case plan.WinLastValue:
		for i := 0; i < n; i++ {
			dst.AppendFrom(arg, w.frameEnd(i, n)-1)
		}
	default:
		return w.aggregate(call, arg, dst, n)
	}
	return nil
}

// aggregate computes count, sum, avg, min or max over each row's frame,
// once per group of peers.
func (w *windowOp) aggregate(call plan.WindowCall, arg *types.Vec, dst *types.Vec, n int) error {
	var count int64
	var sum sumState
	best := -1 // row of the min or max so far
	for i := 0; i < n; {
		end := w.frameEnd(i, n)
		// Fold in the rows up to the frame's end: frames only grow.
		for r := i; r < end; r++ {
			if arg != nil && arg.Nulls[r] {
				continue
			}
			count++
			if arg == nil {
				continue
			}
			if call.Func == plan.WinSum || call.Func == plan.WinAvg {
				if err := sum.add(arg, r, call.Func == plan.WinAvg, dst.Type); err != nil {
					return err
				}
			}
			if call.Func == plan.WinMin || call.Func == plan.WinMax {
				if best < 0 {
					best = r
				} else if c := compareAt(arg, r, arg, best); call.Func == plan.WinMin && c < 0 || call.Func == plan.WinMax && c > 0 {
					best = r
				}
			}
		}
		for r := i; r < end; r++ {
			switch call.Func {
			case plan.WinCount:
				dst.AppendInt(count)
			case plan.WinSum, plan.WinAvg:
				if err := sum.appendTo(dst, call.Func == plan.WinAvg, count); err != nil {
					return err
				}
			default:
				if best < 0 {
					dst.AppendNull()
				} else {
					dst.AppendFrom(arg, best)
				}
			}
		}
		i = end
	}
	return nil
}

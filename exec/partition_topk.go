package exec

import (
	"cmp"
	"slices"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// partitionTopKOp passes on the first rows of each partition of its input
// (plan.PartitionTopK), which it holds until its input ends, then emits
// in input order.
//
// The rows are copied into one store, and each partition lists its own,
// unordered past those its last trim sorted. Once a partition lists
// twice the rows its last trim kept (and at least twice Count), a trim
// sorts them, keeps the first ones the ranking function allows, and
// remembers the last row of the first Count (of the Count-th peer group
// for dense_rank) as the partition's cut: a row that sorts after the cut
// (or is equal to it, for row_number, which keeps the earlier of equal
// rows) could never be kept, and is not copied in. The store drops the
// rows trims dropped once they outnumber those held.
//
// Past its memory budget it emits the rows it holds and passes the rest
// of its input on as it comes: every row it dropped still has, among the
// rows passed on, the rows that rank it past Count, so the window above
// computes the same values for the rows its filter keeps.
type partitionTopKOp struct {
	env *Env
	in  Operator
	n   *plan.PartitionTopK
	k   int
	// groups maps a partition's encoded key to its index in parts.
	groups map[string]int32
	parts  []topKPart
	key    []byte
	// rows is the store; live counts the rows the partitions list.
	rows, spare *types.Batch
	live        int
	// remap is compact's and emit's scratch, one entry per stored row.
	remap []int32
	// arena is where new partitions take their first row lists from.
	arena []int32
	// compare orders stored rows (compareRows, made once).
	compare func(x, y int32) int
	out     *types.Batch
	state   topKState
	// emitted is the next stored row emit looks at; pass says the input
	// follows the rows held.
	emitted int
	pass    bool
	// mem is what the groups and their lists take besides the store.
	mem    int64
	budget int64
	acc    *MemAccount
}

var _ Operator = (*partitionTopKOp)(nil)

// topKPart is one partition of a partitionTopKOp.
type topKPart struct {
	// rows lists the partition's stored rows: the first kept of them in
	// order, as the last trim left them, then those added since.
	rows []int32
	kept int
	// cut is the last row of those the last trim kept that bound the
	// partition (see partitionTopKOp), -1 while there are too few.
	cut int32
}

type topKState uint8

const (
	topKLoading topKState = iota + 1
	topKEmitting
	topKPassing
)

// topKPartBytes is about what a partition takes besides its key and its
// list: its map entry and its topKPart.
const topKPartBytes = mapEntryBytes + 40

func newPartitionTopK(env *Env, n *plan.PartitionTopK) (Operator, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	return partitionTopKOver(env, n, in), nil
}

// partitionTopKOver returns n's operator over in, the operator of
// n.Input.
func partitionTopKOver(env *Env, n *plan.PartitionTopK, in Operator) *partitionTopKOp {
	ts := make([]types.Type, 0, len(n.Input.Columns()))
	for _, c := range n.Input.Columns() {
		ts = append(ts, c.Type)
	}
	o := &partitionTopKOp{env: env, in: in, n: n, k: int(min(n.Count, 1<<30)), groups: make(map[string]int32),
		rows: types.NewBatch(ts, types.BatchSize), out: types.NewBatch(ts, types.BatchSize), state: topKLoading,
		budget: env.spillBudget(), acc: env.account("a partition top-k")}
	o.compare = o.compareRows
	return o
}

// compareRows orders stored rows x and y by the order keys, then in input
// order.
func (o *partitionTopKOp) compareRows(x, y int32) int {
	if c := compareKeys(o.n.OrderBy, o.rows, int(x), o.rows, int(y)); c != 0 {
		return c
	}
	return cmp.Compare(x, y)
}

func (o *partitionTopKOp) Next() (*types.Batch, error) {
	for {
		switch o.state {
		case topKLoading:
			b, err := o.in.Next()
			if err != nil {
				return nil, err
			}
			if err := o.env.canceled(); err != nil {
				return nil, err
			}
			if b == nil {
				o.finish(false)
				continue
			}
			o.add(b)
			err = o.acc.Resize(o.bytes())
			if err != nil || heldBytes(o.rows) > o.budget {
				// Past work_mem, or the server's memory is short.
				o.finish(true)
			}
		case topKEmitting:
			if b := o.emit(); b != nil {
				return b, nil
			}
			if !o.pass {
				return nil, nil
			}
			o.state = topKPassing
			o.rows, o.spare, o.parts, o.groups, o.remap = nil, nil, nil, nil, nil
			o.acc.Close()
		case topKPassing:
			return o.in.Next()
		}
	}
}

// add takes the rows of b that may be among their partitions' first.
func (o *partitionTopKOp) add(b *types.Batch) {
	n := b.Len()
	if o.k == 0 {
		return
	}
	rowNumber := o.n.Func == plan.WinRowNumber
	for r := 0; r < n; r++ {
		o.key = o.key[:0]
		for _, c := range o.n.PartitionBy {
			o.key = appendKey(o.key, b.Cols[c], r)
		}
		p, ok := o.groups[string(o.key)]
		if !ok {
			p = int32(len(o.parts))
			o.groups[string(o.key)] = p
			o.parts = append(o.parts, topKPart{rows: o.newList(), cut: -1})
			o.mem += int64(len(o.key)) + topKPartBytes + 4*int64(cap(o.parts[p].rows))
		}
		part := &o.parts[p]
		if part.cut >= 0 {
			if c := compareKeys(o.n.OrderBy, b, r, o.rows, int(part.cut)); c > 0 || c == 0 && rowNumber {
				continue
			}
		}
		for i, c := range b.Cols {
			o.rows.Cols[i].AppendFrom(c, r)
		}
		was := cap(part.rows)
		part.rows = append(part.rows, int32(o.rows.Len()-1))
		o.mem += 4 * int64(cap(part.rows)-was)
		o.live++
		if len(part.rows) >= 2*max(part.kept, o.k) {
			o.trim(part)
			if o.rows.Len() >= 2*o.live+types.BatchSize {
				o.compact()
			}
		}
	}
}

// newList returns an empty row list for a new partition, with room for
// the rows it lists between trims, from o.arena.
func (o *partitionTopKOp) newList() []int32 {
	n := min(2*o.k, 64)
	if len(o.arena) < n {
		o.arena = make([]int32, 64*types.BatchSize)
	}
	l := o.arena[:0:n]
	o.arena = o.arena[n:]
	return l
}

// trim sorts part's rows and keeps the first the ranking function allows.
func (o *partitionTopKOp) trim(part *topKPart) {
	rows := part.rows
	slices.SortFunc(rows, o.compare)
	peers := func(x, y int32) bool {
		return compareKeys(o.n.OrderBy, o.rows, int(x), o.rows, int(y)) == 0
	}
	k, m := o.k, len(rows)
	part.cut = -1
	switch o.n.Func {
	case plan.WinRowNumber:
		if m >= k {
			m, part.cut = k, rows[k-1]
		}
	case plan.WinRank:
		if m >= k {
			part.cut = rows[k-1]
			for m = k; m < len(rows) && peers(rows[m], part.cut); m++ {
			}
		}
	case plan.WinDenseRank:
		groups := 1
		for i := 1; i < len(rows); i++ {
			if !peers(rows[i], rows[i-1]) {
				if groups == k {
					m = i
					break
				}
				groups++
			}
		}
		if groups == k {
			part.cut = rows[m-1]
		}
	}
	o.live -= len(rows) - m
	part.rows, part.kept = rows[:m], m
}

// compact drops the rows no partition lists from the store, keeping the
// others' order, and renumbers the lists.
func (o *partitionTopKOp) compact() {
	o.markLive()
	if o.spare == nil {
		o.spare = types.NewBatch(batchTypes(o.rows), o.live)
	}
	compactRows(o.rows, o.spare, o.remap)
	for p := range o.parts {
		part := &o.parts[p]
		for j, r := range part.rows {
			part.rows[j] = o.remap[r]
		}
		if part.cut >= 0 {
			part.cut = o.remap[part.cut]
		}
	}
	o.rows, o.spare = o.spare, o.rows
}

// markLive sets o.remap to 0 for each stored row a partition lists, -1
// for the others.
func (o *partitionTopKOp) markLive() {
	o.remap = slices.Grow(o.remap[:0], o.rows.Len())[:o.rows.Len()]
	for i := range o.remap {
		o.remap[i] = -1
	}
	for _, part := range o.parts {
		for _, r := range part.rows {
			o.remap[r] = 0
		}
	}
}

// finish trims the partitions that listed rows since their last trim
// and starts emitting the rows held; pass says the rest of the input
// follows them.
func (o *partitionTopKOp) finish(pass bool) {
	for p := range o.parts {
		if part := &o.parts[p]; len(part.rows) > part.kept {
			o.trim(part)
		}
	}
	o.markLive()
	o.state, o.pass, o.emitted = topKEmitting, pass, 0
}

// emit returns the next batch of the rows held, in input order, or nil
// after the last.
func (o *partitionTopKOp) emit() *types.Batch {
	o.out.Reset()
	for ; o.emitted < len(o.remap) && o.out.Len() < types.BatchSize; o.emitted++ {
		if o.remap[o.emitted] < 0 {
			continue
		}
		for c, v := range o.rows.Cols {
			o.out.Cols[c].AppendFrom(v, o.emitted)
		}
	}
	if o.out.Len() == 0 {
		return nil
	}
	return o.out
}

// bytes is about the memory the operator holds.
func (o *partitionTopKOp) bytes() int64 {
	return batchBytes(o.rows) + batchBytes(o.spare) + batchBytes(o.out) + 4*int64(cap(o.remap)) + o.mem
}

func (o *partitionTopKOp) Close() {
	o.in.Close()
	o.acc.Close()
}

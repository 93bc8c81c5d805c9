package exec

import (
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// aggregateOp is a hash aggregation: groups are found by an encoded key, and
// each aggregate keeps one accumulator per group.
type aggregateOp struct {
	env     *Env
	in      Operator
	node    *plan.Aggregate
	groupEv []evaluator
	argEv   []evaluator
	groups  map[string]int
	keys    []*types.Vec // one row per group
	accs    []*accumulator
	key     []byte
	ngroups int
	out     *types.Batch
	done    bool
}

type accumulator struct {
	call  plan.AggCall
	count []int64
	sums  []sumState // sum, avg
	set   []bool
	vals  *types.Vec // min/max: current value per group
	seen  []map[string]struct{}
	tmp   *types.Vec
	kbuf  []byte
	strs  [][]byte // string_agg: the text so far per group
	// vsum holds sum(vector) and avg(vector)'s element sums per group.
	vsum [][]float64
	varg vectorArg
}

func newAggregate(env *Env, n *plan.Aggregate) (Operator, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	a := &aggregateOp{env: env, in: in, node: n, groups: make(map[string]int)}
	for _, g := range n.GroupBy {
		ev, err := env.compile(g)
		if err != nil {
			in.Close()
			return nil, err
		}
		a.groupEv = append(a.groupEv, ev)
		a.keys = append(a.keys, types.NewVec(g.Type(), 16))
	}
	for _, c := range n.Aggs {
		var ev evaluator
		if c.Arg != nil {
			if ev, err = env.compile(c.Arg); err != nil {
				in.Close()
				return nil, err
			}
		}
		a.argEv = append(a.argEv, ev)
		acc := &accumulator{call: c}
		if c.Func == plan.AggMin || c.Func == plan.AggMax {
			acc.vals = types.NewVec(c.Typ, 16)
			acc.tmp = types.NewVec(c.Typ, 1)
		}
		a.accs = append(a.accs, acc)
	}
	return a, nil
}

// appendKey appends an unambiguous encoding of row i of v.
func appendKey(dst []byte, v *types.Vec, i int) []byte {
	if v.Nulls[i] {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch v.Type.Phys() {
	case types.PhysBool:
		if v.Bools[i] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case types.PhysInt:
		return binary.LittleEndian.AppendUint64(dst, uint64(v.Ints[i]))
	case types.PhysFloat:
		f := v.Floats[i]
		if f == 0 {
			f = 0 // -0 groups with 0
		}
		if math.IsNaN(f) {
			f = math.NaN()
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	b := v.GetBytes(i)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

func (a *aggregateOp) consume() error {
	gvals := make([]*types.Vec, len(a.groupEv))
	avals := make([]*types.Vec, len(a.argEv))
	for {
		b, err := a.in.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		n := b.Len()
		for i, ev := range a.groupEv {
			if gvals[i], err = ev.eval(b); err != nil {
				return err
			}
		}
		for i, ev := range a.argEv {
			if ev != nil {
				if avals[i], err = ev.eval(b); err != nil {
					return err
				}
			}
		}
		for r := 0; r < n; r++ {
			a.key = a.key[:0]
			for _, g := range gvals {
				a.key = appendKey(a.key, g, r)
			}
			gi, ok := a.groups[string(a.key)]
			if !ok {
				gi = a.ngroups
				a.ngroups++
				a.groups[string(a.key)] = gi
				for k, g := range gvals {
					a.keys[k].AppendFrom(g, r)
				}
				for _, acc := range a.accs {
					acc.grow()
				}
			}
			for k, acc := range a.accs {
				if err := acc.add(gi, avals[k], r); err != nil {
					return err
				}
			}
		}
		if err := a.env.canceled(); err != nil {
			return err
		}
	}
}

func (acc *accumulator) grow() {
	acc.count = append(acc.count, 0)
	acc.sums = append(acc.sums, sumState{})
	acc.set = append(acc.set, false)
	if acc.call.Func == plan.AggStringAgg {
		acc.strs = append(acc.strs, nil)
	}
	if acc.call.Typ.IsVector() {
		acc.vsum = append(acc.vsum, nil)
	}
	if acc.vals != nil {
		acc.vals.AppendNull()
	}
	if acc.call.Distinct {
		acc.seen = append(acc.seen, make(map[string]struct{}))
	}
}

func (acc *accumulator) add(g int, v *types.Vec, r int) error {
	if acc.call.Func == plan.AggCountStar {
		acc.count[g]++
		return nil
	}
	if v.Nulls[r] {
		return nil
	}
	if acc.call.Distinct {
		acc.kbuf = appendKey(acc.kbuf[:0], v, r)
		if _, dup := acc.seen[g][string(acc.kbuf)]; dup {
			return nil
		}
		acc.seen[g][string(acc.kbuf)] = struct{}{}
	}
	acc.count[g]++
	switch acc.call.Func {
	case plan.AggSum, plan.AggAvg:
		if acc.call.Typ.IsVector() {
			return acc.addVector(g, v, r)
		}
		return acc.sums[g].add(v, r, acc.call.Func == plan.AggAvg, acc.call.Typ)
	case plan.AggStringAgg:
		if acc.count[g] > 1 {
			acc.strs[g] = append(acc.strs[g], acc.call.Sep...)
		}
		acc.strs[g] = append(acc.strs[g], v.GetBytes(r)...)
	case plan.AggMin, plan.AggMax:
		if !acc.set[g] {
			acc.set[g] = true
			acc.replace(g, v, r)
			return nil
		}
		c := compareAt(v, r, acc.vals, g)
		if (acc.call.Func == plan.AggMin && c < 0) || (acc.call.Func == plan.AggMax && c > 0) {
			acc.replace(g, v, r)
		}
	}
	return nil
}

// replace sets group g's min/max value to row r of v.
func (acc *accumulator) replace(g int, v *types.Vec, r int) {
	vals := acc.vals
	switch vals.Type.Phys() {
	case types.PhysInt:
		vals.Ints[g], vals.Nulls[g] = v.Ints[r], false
	case types.PhysFloat:
		vals.Floats[g], vals.Nulls[g] = v.Floats[r], false
	case types.PhysBool:
		vals.Bools[g], vals.Nulls[g] = v.Bools[r], false
	default:
		// Variable-length values are rebuilt: rare enough (a new extreme).
		nv := types.NewVec(vals.Type, vals.Len())
		for i := 0; i < vals.Len(); i++ {
			if i == g {
				nv.AppendFrom(v, r)
			} else {
				nv.AppendFrom(vals, i)
			}
		}
		acc.vals = nv
	}
}

func (acc *accumulator) appendResult(out *types.Vec, g int) error {
	switch acc.call.Func {
	case plan.AggCount, plan.AggCountStar:
		out.AppendInt(acc.count[g])
	case plan.AggSum, plan.AggAvg:
		if out.Type.IsVector() {
			acc.appendVector(out, g)
			return nil
		}
		return acc.sums[g].appendTo(out, acc.call.Func == plan.AggAvg, acc.count[g])
	case plan.AggStringAgg:
		if acc.count[g] == 0 {
			out.AppendNull()
		} else {
			out.AppendBytes(acc.strs[g])
		}
	default:
		out.AppendFrom(acc.vals, g)
	}
	return nil
}

func (a *aggregateOp) Next() (*types.Batch, error) {
	if a.done {
		return nil, nil
	}
	a.done = true
	if err := a.consume(); err != nil {
		return nil, err
	}
	// Without GROUP BY, an empty input still yields one row.
	if a.ngroups == 0 && len(a.groupEv) == 0 {
		a.ngroups = 1
		for _, acc := range a.accs {
			acc.grow()
		}
	}
	cols := a.node.Columns()
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	a.out = types.NewBatch(ts, a.ngroups)
	for g := 0; g < a.ngroups; g++ {
		for k := range a.keys {
			a.out.Cols[k].AppendFrom(a.keys[k], g)
		}
		for k, acc := range a.accs {
			if err := acc.appendResult(a.out.Cols[len(a.keys)+k], g); err != nil {
				return nil, err
			}
		}
	}
	a.out.SetLen(a.ngroups)
	return a.out, nil
}

func (a *aggregateOp) Close() { a.in.Close() }

// addVector adds row r of v, a vector, to group g's element sums
// (sum(vector), avg(vector)); pgvector's errors for a dimension that
// differs from the group's first and for a sum beyond float4.
func (acc *accumulator) addVector(g int, v *types.Vec, r int) error {
	acc.varg.t = v.Type
	p := acc.varg.row(v, r)
	s := acc.vsum[g]
	if s == nil {
		s = make([]float64, len(p))
		acc.vsum[g] = s
	}
	if len(p) != len(s) {
		return pgerror.Newf(pgerror.DataException, "expected %d dimensions, not %d", len(s), len(p))
	}
	limit := float64(math.MaxFloat32)
	if v.Type.Kind == types.HalfVec {
		limit = 65504 // the largest half
	}
	for k, f := range p {
		s[k] += float64(f)
		if acc.call.Func == plan.AggSum && math.Abs(s[k]) > limit {
			return pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
		}
	}
	return nil
}

// appendVector appends group g's sum or average vector, NULL for a group
// without values.
func (acc *accumulator) appendVector(out *types.Vec, g int) {
	s := acc.vsum[g]
	if acc.count[g] == 0 || s == nil {
		out.AppendNull()
		return
	}
	buf := make([]byte, 0, 4*len(s))
	for _, x := range s {
		if acc.call.Func == plan.AggAvg {
			x /= float64(acc.count[g])
		}
		if out.Type.Kind == types.HalfVec {
			buf = binary.LittleEndian.AppendUint16(buf, types.Float32ToFloat16(float32(x)))
		} else {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(x)))
		}
	}
	out.AppendBytes(buf)
}

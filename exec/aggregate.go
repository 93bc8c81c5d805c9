package exec

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"os"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// aggregateOp is a hash aggregation: groups are found by an encoded key, and
// each aggregate keeps one accumulator per group. Past work_mem (or when
// the server's memory is short) it spills as PostgreSQL 13 does: the
// groups it holds keep aggregating, and the rows of groups it has not
// seen go to one of spillFanout partition files by their key's hash; once
// its input ends it emits the groups held, then aggregates each
// partition in turn the same way (splitting one again if it still does
// not fit).
type aggregateOp struct {
	env     *Env
	in      Operator
	node    *plan.Aggregate
	groupEv []evaluator
	argEv   []evaluator
	// cntEv evaluates, in a final aggregate, avg's partial counts (nil
	// for the other aggregates).
	cntEv   []evaluator
	groups  map[string]int
	keys    []*types.Vec // one row per group
	accs    []*accumulator
	key     []byte
	ngroups int
	out     *types.Batch
	done    bool

	// acc holds what the groups take, about mem bytes.
	acc      *MemAccount
	mem      int64
	budget   int64
	tempFile func() (*os.File, error)
	seed     maphash.Seed
	// rowTypes are the columns of a spilled row: the group keys, then the
	// arguments of the aggregates that have one; view holds them for one
	// input batch.
	rowTypes []types.Type
	view     types.Batch
	// parts are the partition files of the pass running, nil while its
	// groups fit; pending are the partitions left to aggregate, with the
	// depth of partitioning that made them.
	parts   []*spillFile
	depth   int
	pending []pendingPart
	// src reads the partition being aggregated (nil: the input); emit is
	// the next group to emit, loaded whether the pass has read its rows.
	src    *spillReader
	emit   int
	loaded bool
	first  bool
	// more is set when a partial aggregate stopped reading its input to
	// output the groups it holds (plan.AggPartial).
	more bool
	// full is set when the server's memory could not take a partial
	// aggregate's groups: it outputs them at once.
	full bool
}

// pendingPart is a partition of a hash aggregate's rows yet to aggregate.
type pendingPart struct {
	f     *spillFile
	depth int
}

// groupBytes is about what a group takes besides its key's bytes: its
// map entry, its key values and each aggregate's counters.
const groupBytes = mapEntryBytes + 16

type accumulator struct {
	call  plan.AggCall
	count []int64
	sums  []sumState // sum, avg
	set   []bool
	vals  *types.Vec // min/max: current value per group
	seen  []map[string]struct{}
	tmp   *types.Vec
	// bvals holds min/max's value per group for variable-length types
	// (vals then holds only NULLs); nil for a group without one yet.
	bvals [][]byte
	kbuf  []byte
	strs  [][]byte // string_agg: the text so far per group
	// grown is what add made the group's state grow by (string_agg's
	// text, a DISTINCT's set), for the operator's account.
	grown int64
	// acct is the operator's account, which a large string_agg reserves
	// from before it grows.
	acct *MemAccount
	// vsum holds sum(vector) and avg(vector)'s element sums per group.
	vsum [][]float64
	varg vectorArg
	// final is set in a final aggregate: the arguments are partial
	// states, which combine adds.
	final bool
}

func newAggregate(env *Env, n *plan.Aggregate) (Operator, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	a := &aggregateOp{env: env, in: in, node: n, groups: make(map[string]int), acc: env.account("a hash aggregate"),
		budget: env.spillBudget(), seed: maphash.MakeSeed(), first: true}
	if len(n.GroupBy) > 0 && n.Phase != plan.AggPartial {
		a.tempFile = env.tempFile("hashagg-*")
	}
	for _, g := range n.GroupBy {
		a.rowTypes = append(a.rowTypes, g.Type())
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
		if c.Arg != nil {
			a.rowTypes = append(a.rowTypes, c.Arg.Type())
		}
	}
	for _, c := range n.Aggs {
		var ev evaluator
		if c.Count != nil {
			if ev, err = env.compile(c.Count); err != nil {
				in.Close()
				return nil, err
			}
			a.rowTypes = append(a.rowTypes, c.Count.Type())
		}
		a.cntEv = append(a.cntEv, ev)
	}
	a.resetGroups()
	return a, nil
}

// resetGroups empties the table of groups for the next pass.
func (a *aggregateOp) resetGroups() {
	a.groups = make(map[string]int)
	for _, k := range a.keys {
		k.Reset()
	}
	a.accs = a.accs[:0]
	for _, c := range a.node.Aggs {
		acc := &accumulator{call: c, acct: a.acc, final: a.node.Phase == plan.AggFinal}
		if c.Func == plan.AggMin || c.Func == plan.AggMax {
			acc.vals = types.NewVec(c.Typ, 16)
			acc.tmp = types.NewVec(c.Typ, 1)
		}
		a.accs = append(a.accs, acc)
	}
	a.ngroups, a.mem, a.emit, a.full = 0, 0, 0, false
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
	if v.Type.Kind == types.Numeric {
		// Equal numbers group together whatever their display scales.
		n := len(dst)
		dst = types.AppendNumericKey(binary.LittleEndian.AppendUint32(dst, 0), b)
		binary.LittleEndian.PutUint32(dst[n:], uint32(len(dst)-n-4))
		return dst
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// consume aggregates the rows of the pass: the input's (evaluating the
// keys and arguments) or a partition's (which holds them evaluated).
func (a *aggregateOp) consume() error {
	gvals := make([]*types.Vec, len(a.groupEv))
	avals := make([]*types.Vec, len(a.argEv))
	cvals := make([]*types.Vec, len(a.cntEv))
	for {
		if a.node.Phase == plan.AggPartial && (a.mem > a.budget || a.full) {
			// Past its budget, a partial aggregate hands on what it holds
			// rather than spill it: the final aggregate combines it.
			a.more = true
			return nil
		}
		var b *types.Batch
		var err error
		if a.src != nil {
			b, err = a.src.Next()
		} else {
			b, err = a.in.Next()
		}
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		if a.src != nil {
			copy(gvals, b.Cols)
			c := len(gvals)
			for i, ev := range a.argEv {
				if ev != nil {
					avals[i] = b.Cols[c]
					c++
				}
			}
			for i, ev := range a.cntEv {
				if ev != nil {
					cvals[i] = b.Cols[c]
					c++
				}
			}
		} else {
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
			for i, ev := range a.cntEv {
				if ev != nil {
					if cvals[i], err = ev.eval(b); err != nil {
						return err
					}
				}
			}
		}
		if err := a.consumeRows(gvals, avals, cvals, b.Len()); err != nil {
			return err
		}
		if err := a.env.canceled(); err != nil {
			return err
		}
	}
}

// consumeRows aggregates n rows of keys gvals, arguments avals and (in
// a final aggregate) avg's partial counts cvals, or spills the rows of
// groups not held once the pass spills.
func (a *aggregateOp) consumeRows(gvals, avals, cvals []*types.Vec, n int) error {
	if a.parts != nil {
		a.view.Cols = append(append(append(a.view.Cols[:0], gvals...), nonNilVecs(avals)...), nonNilVecs(cvals)...)
	}
	for r := 0; r < n; r++ {
		a.key = a.key[:0]
		for _, g := range gvals {
			a.key = appendKey(a.key, g, r)
		}
		gi, ok := a.groups[string(a.key)]
		if !ok {
			if a.parts != nil {
				p := spillPartition(maphash.Bytes(a.seed, a.key), a.depth)
				if err := a.parts[p].write(&a.view, r); err != nil {
					return err
				}
				continue
			}
			gi = a.ngroups
			a.ngroups++
			a.groups[string(a.key)] = gi
			a.mem += int64(2*len(a.key)) + groupBytes + 25*int64(len(a.accs))
			for k, g := range gvals {
				a.keys[k].AppendFrom(g, r)
			}
			for _, acc := range a.accs {
				acc.grow()
			}
		}
		for k, acc := range a.accs {
			var err error
			if acc.final {
				err = acc.combine(gi, avals[k], cvals[k], r)
			} else {
				err = acc.add(gi, avals[k], r)
			}
			if err != nil {
				return err
			}
			big := acc.grown >= bigValue
			a.mem += acc.grown
			acc.grown = 0
			if big {
				// A large string_agg: charged at once, not at the end of
				// the batch.
				if err := a.acc.Resize(a.mem); err != nil {
					return err
				}
			}
		}
	}
	err := a.acc.Resize(a.mem)
	if err != nil && a.node.Phase == plan.AggPartial && a.ngroups > 0 {
		// The server's memory is short: the groups go on now.
		a.full = true
		return nil
	}
	if a.parts == nil && a.tempFile != nil && a.ngroups > 0 && (err != nil || a.mem > a.budget) && a.depth < maxSpillDepth {
		// Past work_mem, or the server's memory is short: the groups held
		// stay, new ones go to partitions. What the groups held still add
		// (a string_agg's text) is charged as it comes.
		return a.startSpill()
	}
	return err
}

// nonNilVecs returns the vectors of vs that are not nil.
func nonNilVecs(vs []*types.Vec) []*types.Vec {
	out := vs[:0:0]
	for _, v := range vs {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// startSpill opens the pass's partition files.
func (a *aggregateOp) startSpill() error {
	a.parts = make([]*spillFile, spillFanout)
	for i := range a.parts {
		f, err := newSpillFile(a.tempFile, "hash aggregate")
		if err != nil {
			return err
		}
		a.parts[i] = f
	}
	return a.acc.Resize(a.mem + spillFanout*spillWriteBuffer)
}

// appendDoubling is append that doubles a full slice's capacity: a
// group's state is appended once per group, and append's growth by a
// quarter past 256 elements would copy a large table of states many
// times over.
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) && len(s) >= 256 {
		s = slices.Grow(s, len(s))
	}
	return append(s, v)
}

func (acc *accumulator) grow() {
	acc.count = appendDoubling(acc.count, 0)
	switch acc.call.Func {
	case plan.AggSum, plan.AggAvg:
		acc.sums = appendDoubling(acc.sums, sumState{})
	case plan.AggMin, plan.AggMax:
		acc.set = appendDoubling(acc.set, false)
	}
	if acc.call.Func == plan.AggStringAgg {
		acc.strs = append(acc.strs, nil)
	}
	if acc.call.Typ.IsVector() {
		acc.vsum = append(acc.vsum, nil)
	}
	if acc.vals != nil && acc.vals.Type.Phys() == types.PhysBytes {
		acc.bvals = append(acc.bvals, nil)
	} else if acc.vals != nil {
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
		acc.grown += int64(len(acc.kbuf)) + mapEntryBytes
	}
	acc.count[g]++
	switch acc.call.Func {
	case plan.AggSum, plan.AggAvg:
		if acc.call.Typ.IsVector() {
			return acc.addVector(g, v, r)
		}
		return acc.sums[g].add(v, r, acc.call.Func == plan.AggAvg, acc.call.Typ)
	case plan.AggStringAgg:
		add := len(v.GetBytes(r))
		if acc.count[g] > 1 {
			add += len(acc.call.Sep)
		}
		have := len(acc.strs[g])
		if int64(have)+int64(add) > maxFieldBytes {
			return pgerror.New(pgerror.ProgramLimitExceeded, "out of memory").WithDetail(
				"Cannot enlarge string buffer containing %d bytes by %d more bytes.", have, add)
		}
		before := cap(acc.strs[g])
		if need := have + add; need > before && need > bigValue {
			// A large text grows by a quarter: reserve the new buffer
			// (the old one is live while it is copied) before making it.
			newCap := max(need, before+before/4)
			if err := acc.acct.Grow(int64(newCap)); err != nil {
				return err
			}
			grown := make([]byte, have, newCap)
			copy(grown, acc.strs[g])
			acc.strs[g] = grown
			acc.acct.Shrink(int64(newCap))
		}
		if acc.count[g] > 1 {
			acc.strs[g] = append(acc.strs[g], acc.call.Sep...)
		}
		acc.strs[g] = append(acc.strs[g], v.GetBytes(r)...)
		acc.grown += int64(cap(acc.strs[g]) - before)
	case plan.AggMin, plan.AggMax:
		if !acc.set[g] {
			acc.set[g] = true
			acc.replace(g, v, r)
			return nil
		}
		var c int
		if acc.bvals != nil {
			acc.tmp.Reset()
			acc.tmp.AppendBytes(acc.bvals[g])
			c = compareAt(v, r, acc.tmp, 0)
		} else {
			c = compareAt(v, r, acc.vals, g)
		}
		if (acc.call.Func == plan.AggMin && c < 0) || (acc.call.Func == plan.AggMax && c > 0) {
			acc.replace(g, v, r)
		}
	}
	return nil
}

// combine adds row r of v, a partial state, to group g (a final
// aggregate): counts add up, sums add, avg adds its partial sums (v) and
// counts (cnt), min and max compare.
func (acc *accumulator) combine(g int, v, cnt *types.Vec, r int) error {
	if v.Nulls[r] {
		return nil // a sum, min or max of no value
	}
	switch acc.call.Func {
	case plan.AggCount, plan.AggCountStar:
		acc.count[g] += v.Ints[r]
		return nil
	case plan.AggAvg:
		acc.count[g] += cnt.Ints[r]
		if v.Type.Phys() == types.PhysFloat {
			return acc.sums[g].addFloat(v.Floats[r], types.TypFloat8)
		}
		return acc.sums[g].add(v, r, false, acc.call.Typ)
	case plan.AggSum:
		acc.count[g]++
		return acc.sums[g].add(v, r, false, acc.call.Typ)
	}
	return acc.add(g, v, r) // min, max
}

// appendPartial appends group g's partial state to the columns of out it
// takes (plan.AggCall.PartialColumns) and returns how many it took.
func (acc *accumulator) appendPartial(out []*types.Vec, g int) (int, error) {
	switch acc.call.Func {
	case plan.AggCount, plan.AggCountStar:
		out[0].AppendInt(acc.count[g])
		return 1, nil
	case plan.AggAvg:
		if err := acc.sums[g].appendTo(out[0], false, acc.count[g]); err != nil {
			return 0, err
		}
		out[1].AppendInt(acc.count[g])
		return 2, nil
	}
	return 1, acc.appendResult(out[0], g)
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
		old := acc.bvals[g]
		acc.bvals[g] = append(old[:0], v.GetBytes(r)...)
		acc.grown += int64(cap(acc.bvals[g]) - cap(old))
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
		if acc.bvals != nil {
			if acc.set[g] {
				out.AppendBytes(acc.bvals[g])
			} else {
				out.AppendNull()
			}
			return nil
		}
		out.AppendFrom(acc.vals, g)
	}
	return nil
}

func (a *aggregateOp) Next() (*types.Batch, error) {
	for {
		if a.done {
			return nil, nil
		}
		if !a.loaded {
			if err := a.load(); err != nil {
				return nil, err
			}
		}
		if a.emit < a.ngroups {
			return a.emitGroups()
		}
		if a.more {
			// A partial aggregate goes on with the rest of its input.
			a.more, a.loaded = false, false
			a.resetGroups()
			continue
		}
		if len(a.pending) == 0 {
			a.done = true
			return nil, nil
		}
		// The next partition: a pass of its own.
		p := a.pending[len(a.pending)-1]
		a.pending = a.pending[:len(a.pending)-1]
		if a.src != nil {
			a.src.Close()
		}
		r, err := p.f.reader(a.rowTypes)
		if err != nil {
			p.f.close()
			return nil, err
		}
		a.src, a.depth, a.loaded = r, p.depth, false
		a.resetGroups()
	}
}

// load runs a pass over its rows; the partitions it spilled wait their
// turn.
func (a *aggregateOp) load() error {
	a.loaded = true
	if err := a.consume(); err != nil {
		return err
	}
	for _, f := range a.parts {
		if f.rows == 0 {
			f.close()
			continue
		}
		a.pending = append(a.pending, pendingPart{f: f, depth: a.depth + 1})
	}
	a.parts = nil
	// Without GROUP BY, an empty input still yields one row (the final
	// aggregate's, when the work is split).
	if a.first && a.ngroups == 0 && len(a.groupEv) == 0 && a.node.Phase != plan.AggPartial {
		a.ngroups = 1
		for _, acc := range a.accs {
			acc.grow()
		}
	}
	a.first = false
	if a.out == nil {
		cols := a.node.Columns()
		ts := make([]types.Type, len(cols))
		for i, c := range cols {
			ts[i] = c.Type
		}
		a.out = types.NewBatch(ts, types.BatchSize)
	}
	return nil
}

// emitGroups returns the next batch of the pass's groups.
func (a *aggregateOp) emitGroups() (*types.Batch, error) {
	a.out.Reset()
	end := min(a.emit+types.BatchSize, a.ngroups)
	for g := a.emit; g < end; g++ {
		for k := range a.keys {
			a.out.Cols[k].AppendFrom(a.keys[k], g)
		}
		c := len(a.keys)
		for _, acc := range a.accs {
			if a.node.Phase == plan.AggPartial {
				n, err := acc.appendPartial(a.out.Cols[c:], g)
				if err != nil {
					return nil, err
				}
				c += n
				continue
			}
			if err := acc.appendResult(a.out.Cols[c], g); err != nil {
				return nil, err
			}
			c++
		}
	}
	a.out.SetLen(end - a.emit)
	a.emit = end
	return a.out, nil
}

func (a *aggregateOp) Close() {
	a.in.Close()
	if a.src != nil {
		a.src.Close()
	}
	for _, f := range a.parts {
		f.close()
	}
	for _, p := range a.pending {
		p.f.close()
	}
	a.parts, a.pending = nil, nil
	a.acc.Close()
}

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
		acc.grown += 8 * int64(len(p))
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

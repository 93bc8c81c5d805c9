package exec

import (
	"hash/maphash"
	"math"
	"os"
	"sync"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// joinOp joins its left (probe) input with its right (build) input, which
// it reads into memory first. With keys it hashes the build rows and probes
// each left row's chain; without, it pairs every left row with every right
// row (nested loop). Candidate pairs are produced a batch at a time into
// reused vectors, checked against the residual condition, and emitted; an
// outer join then emits the rows that found no match, padded with NULLs.
type joinOp struct {
	env         *Env
	kind        plan.JoinKind
	left, right Operator
	lkeys       []evaluator
	rkeys       []evaluator
	on          evaluator
	ltypes      []types.Type
	rtypes      []types.Type

	built  bool
	build  *types.Batch
	nb     int          // build rows
	bkeys  []*types.Vec // key values of the build rows
	head   map[uint64]int32
	next   []int32 // chain: next build row + 1, 0 at the end
	seed   maphash.Seed
	rmatch []bool // full and right joins: build rows that matched

	probe   *types.Batch
	pkeys   []*types.Vec
	phash   []uint64
	lmatch  []bool
	curL    int
	curR    int // nested loop: next build row; hash: next chain entry + 1 (0: chain not started)
	started bool
	phase   int // 0 pairs, 1 unmatched left rows, then next probe batch
	ldone   bool
	rdone   bool // full join: unmatched build rows emitted

	pl, pr []int
	out    types.Batch
	rows   []int
	sub    gatherer

	// acc holds what the build side takes.
	acc *MemAccount
	// A build side past work_mem makes a grace hash join: both inputs go
	// to partition files by their keys' hash, and each pair of partitions
	// is joined by a child join in turn (which partitions again a build
	// side still too large). depth is how many times the rows were
	// partitioned to reach this join.
	depth int
	grace bool
	// semiOut is the output of a semi or anti join: out's left columns.
	semiOut types.Batch
	pairs   []gracePair
	child   *joinOp
	lparts  []*spillFile
	rparts  []*spillFile

	// shared is the hash table the workers of a Gather share, nil for a
	// join of its own.
	shared *sharedBuild
}

// errSharedBuild is what the workers sharing a hash table see when its
// build did not end.
var errSharedBuild = pgerror.AssertionFailedf("the shared build side of a parallel hash join did not complete")

// sharedBuild is the hash table of a join that the workers of a Gather
// probe together (plan.Join.SharedBuild): the first worker to need it
// builds it from its copy of the right input, the others wait and probe
// it read-only. A build side past work_mem cannot be shared (each
// worker's grace join partitions its own probe rows against it), so then
// every worker builds its own from its own copy of the right input.
type sharedBuild struct {
	once sync.Once
	err  error
	// own is set when the build went past work_mem: each worker joins
	// on its own.
	own bool
	// builder is the join that built the table; the rest is its.
	builder *joinOp
	build   *types.Batch
	nb      int
	bkeys   []*types.Vec
	head    map[uint64]int32
	next    []int32
	seed    maphash.Seed
	// acc holds what the table takes until the Gather closes.
	acc *MemAccount
}

// gracePair is a partition of each side of a grace hash join.
type gracePair struct{ l, r *spillFile }

func newJoin(env *Env, n *plan.Join) (Operator, error) {
	left, err := Build(env, n.Left)
	if err != nil {
		return nil, err
	}
	right, err := Build(env, n.Right)
	if err != nil {
		left.Close()
		return nil, err
	}
	j := &joinOp{env: env, kind: n.Kind, left: left, right: right, seed: maphash.MakeSeed(), acc: env.account("the build side of a hash join")}
	if n.SharedBuild && env.sharedBuilds != nil && len(n.LeftKeys) > 0 {
		j.shared = env.sharedBuilds[n]
		if j.shared == nil {
			j.shared = &sharedBuild{}
			env.sharedBuilds[n] = j.shared
		}
	}
	fail := func(err error) (Operator, error) {
		j.Close()
		return nil, err
	}
	for _, c := range n.Left.Columns() {
		j.ltypes = append(j.ltypes, c.Type)
	}
	for _, c := range n.Right.Columns() {
		j.rtypes = append(j.rtypes, c.Type)
	}
	for i := range n.LeftKeys {
		lk, err := env.compile(n.LeftKeys[i])
		if err != nil {
			return fail(err)
		}
		rk, err := env.compile(n.RightKeys[i])
		if err != nil {
			return fail(err)
		}
		j.lkeys, j.rkeys = append(j.lkeys, lk), append(j.rkeys, rk)
	}
	if n.On != nil {
		if j.on, err = env.compile(n.On); err != nil {
			return fail(err)
		}
	}
	j.out.Cols = make([]*types.Vec, 0, len(j.ltypes)+len(j.rtypes))
	j.initOutput()
	return j, nil
}

func (j *joinOp) initOutput() {
	for _, t := range j.ltypes {
		j.out.Cols = append(j.out.Cols, types.NewVec(t, types.BatchSize))
	}
	for _, t := range j.rtypes {
		j.out.Cols = append(j.out.Cols, types.NewVec(t, types.BatchSize))
	}
	j.pl = make([]int, 0, types.BatchSize)
	j.pr = make([]int, 0, types.BatchSize)
}

// hashRow hashes the key values of row i; ok is false when one is NULL
// (a NULL key matches nothing).
func hashRow(seed maphash.Seed, keys []*types.Vec, i int) (h uint64, ok bool) {
	h = 0x9e3779b97f4a7c15
	for _, k := range keys {
		if k.Nulls[i] {
			return 0, false
		}
		var x uint64
		switch k.Type.Phys() {
		case types.PhysInt:
			x = uint64(k.Ints[i])
		case types.PhysFloat:
			f := k.Floats[i]
			switch {
			case f == 0:
				f = 0 // -0 = 0
			case math.IsNaN(f):
				f = math.NaN()
			}
			x = math.Float64bits(f)
		case types.PhysBool:
			if k.Bools[i] {
				x = 1
			}
		default:
			b := k.GetBytes(i)
			if k.Type.Kind == types.Numeric {
				// Equal numbers hash alike whatever their display scales.
				var buf [32]byte
				b = types.AppendNumericKey(buf[:0], b)
			}
			x = maphash.Bytes(seed, b)
		}
		h ^= x
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return h, true
}

// buildSide reads the right input into the hash table, or takes the
// table the Gather's workers share.
func (j *joinOp) buildSide() error {
	s := j.shared
	if s == nil {
		return j.buildOwn()
	}
	s.once.Do(func() {
		s.builder = j
		// Until the build ends well: a panic in it (reported by the
		// builder's worker) leaves the others this error, not a table.
		s.err = errSharedBuild
		if s.err = j.buildOwn(); s.err != nil || j.grace {
			s.own = true
			return
		}
		s.build, s.nb, s.bkeys, s.head, s.next, s.seed = j.build, j.nb, j.bkeys, j.head, j.next, j.seed
		// The table outlives the builder's pipeline, which may end
		// first: the Gather gives its memory back.
		s.acc, j.acc = j.acc, j.env.account("the build side of a hash join")
	})
	switch {
	case s.builder == j:
		return s.err
	case s.err != nil:
		return s.err
	case s.own:
		return j.buildOwn()
	}
	j.built = true
	j.build, j.nb, j.bkeys, j.head, j.next, j.seed = s.build, s.nb, s.bkeys, s.head, s.next, s.seed
	return nil
}

func (j *joinOp) buildOwn() error {
	j.built = true
	j.build = types.NewBatch(j.rtypes, types.BatchSize)
	budget, tempFile := j.env.spillBudget(), j.env.tempFile("hashjoin-*")
	for {
		b, err := j.right.Next()
		if err != nil {
			return err
		}
		if b == nil {
			break
		}
		for i, c := range b.Cols {
			j.build.Cols[i].AppendVec(c)
		}
		j.nb += b.Len()
		j.build.SetLen(j.nb)
		err = j.acc.Resize(2 * batchBytes(j.build))
		if (err != nil || heldBytes(j.build) > budget) && len(j.rkeys) > 0 && tempFile != nil && j.depth < maxSpillDepth {
			return j.startGrace(tempFile)
		}
		if err != nil {
			return err
		}
		if batchBytes(j.build) > maxBuildBytes {
			return tooMuchMemory("the build side of a join")
		}
	}
	j.build.SetLen(j.nb)
	if j.kind == plan.JoinFull || j.kind == plan.JoinRight || j.rightOnly() {
		j.rmatch = make([]bool, j.nb)
	}
	if len(j.rkeys) == 0 {
		return nil
	}
	j.bkeys = make([]*types.Vec, len(j.rkeys))
	for i, k := range j.rkeys {
		v, err := k.eval(j.build)
		if err != nil {
			return err
		}
		j.bkeys[i] = v
	}
	// The hash table: its map and chains.
	if err := j.acc.Resize(2*batchBytes(j.build) + int64(j.nb)*(mapEntryBytes/2+4)); err != nil {
		return err
	}
	j.head = make(map[uint64]int32, j.nb)
	j.next = make([]int32, j.nb)
	// Chains run in build order: insert from the end.
	for r := j.nb - 1; r >= 0; r-- {
		h, ok := hashRow(j.seed, j.bkeys, r)
		if !ok {
			continue
		}
		j.next[r] = j.head[h]
		j.head[h] = int32(r + 1)
	}
	return nil
}

// nextProbe reads the next left batch; false at the end of the left input.
func (j *joinOp) nextProbe() (bool, error) {
	b, err := j.left.Next()
	if err != nil || b == nil {
		return false, err
	}
	j.probe = b
	n := b.Len()
	j.curL, j.curR, j.started, j.phase = 0, 0, false, 0
	if cap(j.lmatch) < n {
		j.lmatch = make([]bool, n)
	}
	j.lmatch = j.lmatch[:n]
	clear(j.lmatch)
	if len(j.lkeys) > 0 {
		if len(j.pkeys) != len(j.lkeys) {
			j.pkeys = make([]*types.Vec, len(j.lkeys))
		}
		for i, k := range j.lkeys {
			v, err := k.eval(b)
			if err != nil {
				return false, err
			}
			j.pkeys[i] = v
		}
		j.phash = j.phash[:0]
		for r := 0; r < n; r++ {
			h, ok := hashRow(j.seed, j.pkeys, r)
			if !ok {
				h = 0
			}
			j.phash = append(j.phash, h)
		}
	}
	return true, nil
}

func (j *joinOp) keysEqual(l, r int) bool {
	for i, k := range j.pkeys {
		if k.Nulls[l] || j.bkeys[i].Nulls[r] || compareAt(k, l, j.bkeys[i], r) != 0 {
			return false
		}
	}
	return true
}

// fillPairs puts up to a batch of the current probe batch's candidate pairs
// into pl/pr; none means the probe batch is done.
func (j *joinOp) fillPairs() {
	j.pl, j.pr = j.pl[:0], j.pr[:0]
	n := j.probe.Len()
	if len(j.lkeys) == 0 {
		for j.curL < n && len(j.pl) < types.BatchSize {
			for j.curR < j.nb && len(j.pl) < types.BatchSize {
				j.pl = append(j.pl, j.curL)
				j.pr = append(j.pr, j.curR)
				j.curR++
			}
			if j.curR >= j.nb {
				j.curR = 0
				j.curL++
			}
		}
		return
	}
	for j.curL < n && len(j.pl) < types.BatchSize {
		if !j.started {
			j.started = true
			j.curR = 0
			if !hasNullKey(j.pkeys, j.curL) {
				j.curR = int(j.head[j.phash[j.curL]])
			}
		}
		for j.curR != 0 && len(j.pl) < types.BatchSize {
			r := j.curR - 1
			if j.keysEqual(j.curL, r) {
				j.pl = append(j.pl, j.curL)
				j.pr = append(j.pr, r)
			}
			j.curR = int(j.next[r])
		}
		if j.curR == 0 {
			j.started = false
			j.curL++
		}
	}
}

func hasNullKey(keys []*types.Vec, i int) bool {
	for _, k := range keys {
		if k.Nulls[i] {
			return true
		}
	}
	return false
}

// emit fills the output batch with the pairs pl/pr (-1: a NULL side).
func (j *joinOp) emit(lb *types.Batch) *types.Batch {
	nl := len(j.ltypes)
	for c := range j.out.Cols {
		j.out.Cols[c].Reset()
	}
	for k := range j.pl {
		l, r := j.pl[k], j.pr[k]
		for c := 0; c < nl; c++ {
			if l < 0 {
				j.out.Cols[c].AppendNull()
			} else {
				j.out.Cols[c].AppendFrom(lb.Cols[c], l)
			}
		}
		for c := range j.rtypes {
			if r < 0 {
				j.out.Cols[nl+c].AppendNull()
			} else {
				j.out.Cols[nl+c].AppendFrom(j.build.Cols[c], r)
			}
		}
	}
	j.out.SetLen(len(j.pl))
	return &j.out
}

func (j *joinOp) Next() (*types.Batch, error) {
	if !j.built {
		if err := j.buildSide(); err != nil {
			return nil, err
		}
		if j.grace {
			return j.nextGrace()
		}
		if j.nb == 0 && (j.kind == plan.JoinInner || j.rightOnly()) {
			return nil, nil
		}
		if err := j.advance(); err != nil {
			return nil, err
		}
	}
	if j.grace {
		return j.nextGrace()
	}
	for {
		if err := j.env.canceled(); err != nil {
			return nil, err
		}
		if j.ldone {
			return j.unmatchedRight(), nil
		}
		switch j.phase {
		case 0:
			j.fillPairs()
			if len(j.pl) == 0 {
				j.phase = 1
				continue
			}
			if j.on == nil && j.rightOnly() {
				// Only which build rows matched matters.
				for _, r := range j.pr {
					j.rmatch[r] = true
				}
				continue
			}
			out := j.emit(j.probe)
			if j.on == nil {
				j.markMatched(nil, true)
				if j.leftOnly() {
					continue // the matched rows go out at the batch's end
				}
				return out, nil
			}
			pred, err := j.on.eval(out)
			if err != nil {
				return nil, err
			}
			j.rows = selectRows(j.rows[:0], pred, out.Len())
			j.markMatched(j.rows, false)
			if j.leftOnly() || j.rightOnly() {
				continue
			}
			switch len(j.rows) {
			case 0:
				continue
			case out.Len():
				return out, nil
			}
			return j.sub.gather(out, j.rows), nil
		case 1:
			j.phase = 2
			if j.kind == plan.JoinInner || j.kind == plan.JoinRight || j.rightOnly() {
				continue
			}
			// Left rows without a match (left, anti join), or with one
			// (semi join).
			want := j.kind == plan.JoinSemi
			j.pl, j.pr = j.pl[:0], j.pr[:0]
			for l, m := range j.lmatch {
				if m == want {
					j.pl = append(j.pl, l)
					j.pr = append(j.pr, -1)
				}
			}
			if len(j.pl) > 0 {
				out := j.emit(j.probe)
				if j.leftOnly() {
					j.semiOut.Cols = out.Cols[:len(j.ltypes)]
					j.semiOut.SetLen(out.Len())
					return &j.semiOut, nil
				}
				return out, nil
			}
		default:
			if err := j.advance(); err != nil {
				return nil, err
			}
		}
	}
}

// leftOnly reports whether the join returns its left rows only (semi and
// anti joins).
func (j *joinOp) leftOnly() bool { return j.kind == plan.JoinSemi || j.kind == plan.JoinAnti }

// rightOnly reports whether the join returns its build rows only (right
// semi and anti joins): after the probe, those that matched or not.
func (j *joinOp) rightOnly() bool {
	return j.kind == plan.JoinRightSemi || j.kind == plan.JoinRightAnti
}

// advance moves to the next probe batch, or to the end of the left input.
func (j *joinOp) advance() error {
	ok, err := j.nextProbe()
	if err != nil {
		return err
	}
	if !ok {
		j.ldone, j.curR = true, 0
	}
	return nil
}

// markMatched records which pairs matched: those rows lists (indexes into
// pl/pr), or all of them.
func (j *joinOp) markMatched(rows []int, all bool) {
	if j.kind == plan.JoinInner {
		return
	}
	mark := func(k int) {
		j.lmatch[j.pl[k]] = true
		if j.rmatch != nil {
			j.rmatch[j.pr[k]] = true
		}
	}
	if all {
		for k := range j.pl {
			mark(k)
		}
		return
	}
	for _, k := range rows {
		mark(k)
	}
}

// unmatchedRight emits, for a full, right or right anti join, the build
// rows no left row matched (for a right semi join those some row
// matched), a batch at a time; nil when done.
func (j *joinOp) unmatchedRight() *types.Batch {
	if j.rmatch == nil || j.rdone {
		return nil
	}
	want := j.kind == plan.JoinRightSemi
	for !j.rdone {
		j.pl, j.pr = j.pl[:0], j.pr[:0]
		for ; j.curR < j.nb && len(j.pl) < types.BatchSize; j.curR++ {
			if j.rmatch[j.curR] == want {
				j.pl = append(j.pl, -1)
				j.pr = append(j.pr, j.curR)
			}
		}
		if j.curR >= j.nb {
			j.rdone = true
		}
		if len(j.pl) == 0 {
			continue
		}
		out := j.emit(nil)
		if j.rightOnly() {
			j.semiOut.Cols = out.Cols[len(j.ltypes):]
			j.semiOut.SetLen(out.Len())
			return &j.semiOut
		}
		return out
	}
	return nil
}

func (j *joinOp) Close() {
	j.left.Close()
	j.right.Close()
	if j.child != nil {
		j.child.Close()
		j.child = nil
	}
	for _, f := range j.lparts {
		f.close()
	}
	for _, f := range j.rparts {
		f.close()
	}
	for _, p := range j.pairs {
		p.l.close()
		p.r.close()
	}
	j.lparts, j.rparts, j.pairs = nil, nil, nil
	j.acc.Close()
}

// startGrace turns the join into a grace hash join: the build rows read
// so far, the rest of the build side and then the whole probe side go to
// spillFanout partition files each, by their keys' hash (a row with a
// NULL key, which matches nothing, to the first, where an outer join
// still emits it).
func (j *joinOp) startGrace(tempFile func() (*os.File, error)) error {
	j.grace = true
	j.lparts = make([]*spillFile, spillFanout)
	j.rparts = make([]*spillFile, spillFanout)
	for i := range spillFanout {
		var err error
		if j.lparts[i], err = newSpillFile(tempFile, "hash join"); err != nil {
			return err
		}
		if j.rparts[i], err = newSpillFile(tempFile, "hash join"); err != nil {
			return err
		}
	}
	if err := j.partition(j.build, j.rkeys, j.rparts); err != nil {
		return err
	}
	j.build, j.nb = nil, 0
	if err := j.acc.Resize(2 * spillFanout * spillWriteBuffer); err != nil {
		return err
	}
	for _, side := range []struct {
		in    Operator
		keys  []evaluator
		parts []*spillFile
	}{{j.right, j.rkeys, j.rparts}, {j.left, j.lkeys, j.lparts}} {
		for {
			b, err := side.in.Next()
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			if err := j.partition(b, side.keys, side.parts); err != nil {
				return err
			}
			if err := j.env.canceled(); err != nil {
				return err
			}
		}
	}
	for i := range spillFanout {
		l, r := j.lparts[i], j.rparts[i]
		if l.rows == 0 && (r.rows == 0 || (j.kind != plan.JoinFull && j.kind != plan.JoinRight && j.kind != plan.JoinRightAnti)) {
			l.close()
			r.close()
			continue
		}
		j.pairs = append(j.pairs, gracePair{l, r})
	}
	j.lparts, j.rparts = nil, nil
	return nil
}

// partition writes the rows of b to parts by the hash of their keys.
func (j *joinOp) partition(b *types.Batch, keys []evaluator, parts []*spillFile) error {
	if b.Len() == 0 {
		return nil
	}
	kv := make([]*types.Vec, len(keys))
	for i, k := range keys {
		v, err := k.eval(b)
		if err != nil {
			return err
		}
		kv[i] = v
	}
	for r := range b.Len() {
		p := 0
		if h, ok := hashRow(j.seed, kv, r); ok {
			p = spillPartition(h, j.depth)
		}
		if err := parts[p].write(b, r); err != nil {
			return err
		}
	}
	return nil
}

// nextGrace returns the next rows of the pairs of partitions, each joined
// by a child join.
func (j *joinOp) nextGrace() (*types.Batch, error) {
	for {
		if j.child != nil {
			b, err := j.child.Next()
			if err != nil || b != nil {
				return b, err
			}
			j.child.Close()
			j.child = nil
		}
		if len(j.pairs) == 0 {
			return nil, nil
		}
		p := j.pairs[0]
		j.pairs = j.pairs[1:]
		l, err := p.l.reader(j.ltypes)
		if err != nil {
			p.l.close()
			p.r.close()
			return nil, err
		}
		r, err := p.r.reader(j.rtypes)
		if err != nil {
			l.Close()
			p.r.close()
			return nil, err
		}
		c := &joinOp{env: j.env, kind: j.kind, left: l, right: r, lkeys: j.lkeys, rkeys: j.rkeys, on: j.on,
			ltypes: j.ltypes, rtypes: j.rtypes, seed: j.seed, depth: j.depth + 1, acc: j.env.account("the build side of a hash join")}
		c.initOutput()
		j.child = c
	}
}

// maxBuildBytes bounds what one operator holds in memory (a join's build
// side, a recursive query's rows): past it the query fails with 53200
// rather than exhausting the server.
var maxBuildBytes int64 = 1 << 30

// batchBytes estimates the memory a batch's values take (by capacity:
// what its vectors hold allocated).
func batchBytes(b *types.Batch) int64 {
	if b == nil {
		return 0
	}
	var n int64
	for _, c := range b.Cols {
		n += vecBytes(c)
	}
	return n
}

// vecBytes estimates the memory a vector's values take.
func vecBytes(c *types.Vec) int64 {
	return int64(cap(c.Bytes.Data)) + 4*int64(cap(c.Bytes.Offsets)) + 8*int64(cap(c.Ints)+cap(c.Floats)) +
		int64(cap(c.Bools)+cap(c.Nulls))
}

func tooMuchMemory(what string) error {
	return pgerror.Newf(pgerror.OutOfMemory, "out of memory: %s holds more than %d bytes", what, maxBuildBytes)
}

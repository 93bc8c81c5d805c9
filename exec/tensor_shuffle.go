package exec

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// rowStore holds rows copied out of the query's batches, by slot: the
// shuffle buffer (a fixed number of slots, overwritten in place) and the
// rows of an exact shuffle.
type rowStore struct {
	cols []storeCol
	// n is the slots in use; alloc the slots made (a slot past n, let go
	// by n--, is reused).
	n, alloc int
	// size is about the memory the slots' values took when set, for the
	// exact shuffle's budget (spillAt).
	size int64
	// held is the memory the slots hold now: their entries and the
	// capacity of their values' buffers (for the shuffle buffer's bound,
	// checkShuffleBuffer).
	held int64
}

// storeCol is one column of a rowStore; every slice has one entry per
// slot, whatever the column's physical type, so a slot reads uniformly.
type storeCol struct {
	nulls  []bool
	bools  []bool
	ints   []int64
	floats []float64
	bytes  [][]byte
	// exts holds, for a hollow column's slot, where its value is stored
	// (a one-row extent; Rows 0 for a value in bytes).
	exts []storage.Extent
}

func newRowStore(ncols int) *rowStore { return &rowStore{cols: make([]storeCol, ncols)} }

// set copies row i of cols into slot s (s ≤ st.n; s == st.n adds a slot),
// or for a hollow window (f.extentOf) or a row whose extent f.rowExtent
// knows, where the row's value is stored.
// text[j] asks for column j's text form (see tensorCol.text); scratch
// holds it.
func (st *rowStore) set(s int, cols []*types.Vec, i int, f *tensorFrames) error {
	if s == st.n {
		if st.n < st.alloc {
			st.n++
		} else {
			st.addSlot()
		}
	}
	for j, v := range cols {
		c := &st.cols[j]
		c.nulls[s] = v.Nulls[i]
		st.held -= int64(cap(c.bytes[s]))
		c.bytes[s] = c.bytes[s][:0]
		if c.exts != nil {
			c.exts[s] = storage.Extent{}
		}
		if v.Nulls[i] {
			st.held += int64(cap(c.bytes[s]))
			continue
		}
		if (f.extentOf != nil || f.rowExtent != nil) && v.Type.Phys() == types.PhysBytes {
			var e storage.Extent
			var ok bool
			if f.rowExtent != nil {
				e, ok = f.rowExtent(v, i)
			} else if e, ok = f.extentOf(v); ok {
				e = e.Slice(i, i+1)
			}
			if ok {
				if c.exts == nil {
					// Only the columns that hold extents have room for them.
					c.exts = make([]storage.Extent, len(c.nulls))
					st.size += int64(len(c.nulls)) * extentSize
					st.held += int64(len(c.nulls)) * extentSize
				}
				c.exts[s] = e
				st.held += int64(cap(c.bytes[s]))
				continue
			}
			if int(v.Bytes.Offsets[i+1]) > len(v.Bytes.Data) {
				return pgerror.AssertionFailedf("tensor stream: column %q has no bytes for its rows", f.cols[j].name)
			}
		}
		if f.cols[j].text {
			// A column sent as text keeps its text form (see addVec).
			c.bytes[s] = types.AppendText(c.bytes[s], v, i)
			st.size += int64(len(c.bytes[s]))
			st.held += int64(cap(c.bytes[s]))
			continue
		}
		switch v.Type.Phys() {
		case types.PhysBool:
			c.bools[s] = v.Bools[i]
		case types.PhysInt:
			c.ints[s] = v.Ints[i]
		case types.PhysFloat:
			c.floats[s] = v.Floats[i]
		default:
			c.bytes[s] = append(c.bytes[s], v.Bytes.Get(i)...)
			st.size += int64(len(c.bytes[s]))
		}
		st.held += int64(cap(c.bytes[s]))
	}
	return nil
}

// extentSize is about the memory of a slot's extent.
const extentSize = int64(unsafe.Sizeof(storage.Extent{}))

// addSlot adds an empty slot.
func (st *rowStore) addSlot() {
	for j := range st.cols {
		c := &st.cols[j]
		c.nulls = append(c.nulls, false)
		c.bools = append(c.bools, false)
		c.ints = append(c.ints, 0)
		c.floats = append(c.floats, 0)
		if c.exts != nil {
			c.exts = append(c.exts, storage.Extent{})
			st.size += extentSize
			st.held += extentSize
		}
		if len(c.bytes) < cap(c.bytes) {
			c.bytes = c.bytes[:len(c.bytes)+1]
		} else {
			c.bytes = append(c.bytes, nil)
		}
	}
	st.n++
	st.alloc++
	st.size += int64(len(st.cols)) * 42 // a slot's entries in the five slices
	st.held += int64(len(st.cols)) * 42
}

// swap exchanges slots a and b.
func (st *rowStore) swap(a, b int) {
	for j := range st.cols {
		c := &st.cols[j]
		c.nulls[a], c.nulls[b] = c.nulls[b], c.nulls[a]
		c.bools[a], c.bools[b] = c.bools[b], c.bools[a]
		c.ints[a], c.ints[b] = c.ints[b], c.ints[a]
		c.floats[a], c.floats[b] = c.floats[b], c.floats[a]
		c.bytes[a], c.bytes[b] = c.bytes[b], c.bytes[a]
		if c.exts != nil {
			c.exts[a], c.exts[b] = c.exts[b], c.exts[a]
		}
	}
}

// tensorStream orders the query's rows as the options say (shard,
// shuffle, START_BATCH) and writes them as frames.
type tensorStream struct {
	opts   plan.TensorOptions
	frames *tensorFrames
	w      io.Writer
	rng    *rand.Rand
	// store is the shuffle buffer, or every row for an exact shuffle;
	// bufMem is what the shuffle buffer holds of the server's memory
	// budget (nil: not counted).
	store  *rowStore
	bufMem *MemAccount
	// pos counts the query's rows (for sharding by position); skip the
	// rows still to skip for START_BATCH; batch the next frame's index;
	// sent the rows written.
	pos  int64
	skip int64
	// canceled reports a canceled statement (nil: never).
	canceled func() error
	// byGroup is set when the rows come from this shard's row groups
	// only, already sharded.
	byGroup bool
	batch   uint64
	sent    int64
	// end is the query row (counted by pos) at which an in-order stream
	// ends, for a LIMIT (-1: none); add returns errStreamEnd there.
	end int64
	// replaying is set while a resumed buffer-shuffled stream replays
	// its skipped rows by id (see replayIDs); slotIDs then holds the row
	// id in each slot of the buffer instead of its values.
	replaying bool
	slotIDs   []uint64
	// grown counts the rows that joined the shuffle buffer while it was
	// growing (growOut).
	grown int
	// spill holds an exact shuffle's rows once they outgrow spillAt bytes
	// (see keep); scratch is a one-slot store its rows pass through.
	// tempFile makes its file (nil: rows stay in memory).
	spill    *spillRows
	scratch  *rowStore
	spillAt  int64
	tempFile func() (*os.File, error)
}

func newTensorStream(cols []plan.Column, opts plan.TensorOptions, w io.Writer) *tensorStream {
	ts := &tensorStream{
		opts:   opts,
		frames: newTensorFrames(cols),
		w:      w,
		// The rank is in the stream so shards shuffle independently.
		rng:   rand.New(rand.NewPCG(opts.Seed, rankSeedStream(opts.Rank))),
		skip:  opts.StartBatch * int64(opts.BatchSize),
		batch: uint64(opts.StartBatch),
		end:   -1,
	}
	if opts.Shuffle != plan.ShuffleNone {
		ts.store = newRowStore(len(cols))
	}
	ts.frames.limitFrames(opts.BatchSize)
	return ts
}

// add takes the rows of a batch of the query.
func (ts *tensorStream) add(b *types.Batch) error {
	if ts.opts.Shuffle == plan.ShuffleNone && (ts.opts.World == 1 || ts.byGroup) {
		return ts.addInOrder(b)
	}
	world, rank := int64(ts.opts.World), int64(ts.opts.Rank)
	for i, n := 0, b.Len(); i < n; i++ {
		p := ts.pos
		ts.pos++
		if world > 1 && !ts.byGroup && p%world != rank {
			continue
		}
		switch ts.opts.Shuffle {
		case plan.ShuffleNone:
			if err := ts.emitRow(b.Cols, i); err != nil {
				return err
			}
		case plan.ShuffleExact:
			if err := ts.keep(b.Cols, i); err != nil {
				return err
			}
		default:
			st := ts.store
			if st.n < ts.opts.ShuffleBuffer {
				// Filling, then growing (see shuffleFill).
				if err := st.set(st.n, b.Cols, i, ts.frames); err != nil {
					return err
				}
				if err := ts.checkShuffleBuffer(); err != nil {
					return err
				}
				if !ts.growOut(st.n) {
					continue
				}
				s := ts.rng.IntN(st.n)
				if err := ts.emitSlot(s); err != nil {
					return err
				}
				st.swap(s, st.n-1)
				st.n--
				continue
			}
			// The buffer is full: a random buffered row goes out and the
			// incoming row takes its slot.
			s := ts.rng.IntN(st.n)
			if err := ts.emitSlot(s); err != nil {
				return err
			}
			if err := st.set(s, b.Cols, i, ts.frames); err != nil {
				return err
			}
			if err := ts.checkShuffleBuffer(); err != nil {
				return err
			}
		}
	}
	return nil
}

// shuffleFill is the least number of rows a shuffle buffer holds before
// rows start to go out: from then on, until it holds SHUFFLE_BUFFER rows,
// every incoming row joins it and every second one a random row goes out
// (the buffer grows by one row in two), so that the first batch does not
// wait for the whole buffer to fill.
func (ts *tensorStream) shuffleFill() int {
	return min(ts.opts.ShuffleBuffer, max(ts.opts.BatchSize, 1024))
}

// growOut counts a row that has just joined a buffer not yet full, which
// now holds n rows, and reports whether a random row goes out after it:
// every second row once the buffer holds shuffleFill rows.
func (ts *tensorStream) growOut(n int) bool {
	if n <= ts.shuffleFill() {
		return false
	}
	ts.grown++
	return ts.grown%2 == 0
}

// replayIDs takes the rows with the given ids into the shuffle buffer as
// add would, but records each slot's row id instead of copying its values:
// which slot a row takes and which row goes out depend only on the seed
// and the number of rows, never on their values. It stops after the last
// row to skip has gone out and returns how many of ids it took.
func (ts *tensorStream) replayIDs(ids []uint64) int {
	for i, id := range ids {
		if len(ts.slotIDs) < ts.opts.ShuffleBuffer {
			ts.slotIDs = append(ts.slotIDs, id)
			if !ts.growOut(len(ts.slotIDs)) {
				continue
			}
			s := ts.rng.IntN(len(ts.slotIDs))
			ts.skip-- // slot s's row goes out, skipped; the last takes its slot
			last := len(ts.slotIDs) - 1
			ts.slotIDs[s] = ts.slotIDs[last]
			ts.slotIDs = ts.slotIDs[:last]
			if ts.skip == 0 {
				return i + 1
			}
			continue
		}
		s := ts.rng.IntN(len(ts.slotIDs))
		ts.skip-- // slot s's row goes out, skipped
		ts.slotIDs[s] = id
		if ts.skip == 0 {
			return i + 1
		}
	}
	return len(ids)
}

// addInOrder takes the rows of b as they come, in runs that end at a
// frame's end. A frame's rows are borrowed from b where they can be and
// copied only when the frame continues past b (unborrow): b's memory is
// the query's until its next batch.
func (ts *tensorStream) addInOrder(b *types.Batch) error {
	n := b.Len()
	if ts.end >= 0 {
		n = int(min(int64(n), max(ts.end-ts.pos, 0)))
	}
	ts.pos += int64(n)
	i := 0
	if ts.skip > 0 {
		k := min(int64(n), ts.skip)
		ts.skip -= k
		i = int(k)
	}
	for i < n {
		k := min(n-i, ts.opts.BatchSize-ts.frames.rows)
		if err := ts.frames.addRange(b.Cols, i, i+k); err != nil {
			return err
		}
		i += k
		if err := ts.maybeFlush(); err != nil {
			return err
		}
	}
	ts.frames.unborrow()
	if ts.end >= 0 && ts.pos >= ts.end {
		return errStreamEnd
	}
	return nil
}

// errStreamEnd ends a stream at its LIMIT (tensorStream.end).
var errStreamEnd = errors.New("end of the tensor stream")

// finish drains the store in a random order and writes the last frame.
func (ts *tensorStream) finish() error {
	if ts.spill != nil {
		if err := ts.drainSpill(); err != nil {
			return err
		}
	} else if st := ts.store; st != nil {
		// Fisher-Yates: each step emits a uniform pick of the slots left.
		for k := st.n - 1; k >= 0; k-- {
			s := ts.rng.IntN(k + 1)
			st.swap(s, k)
			if err := ts.emitSlot(k); err != nil {
				return err
			}
		}
		st.n = 0
	}
	if ts.frames.rows > 0 && !ts.opts.DropLast {
		return ts.flush()
	}
	return nil
}

func (ts *tensorStream) emitRow(cols []*types.Vec, i int) error {
	if ts.skip > 0 {
		ts.skip--
		return nil
	}
	if err := ts.frames.addRow(cols, i); err != nil {
		return err
	}
	return ts.maybeFlush()
}

func (ts *tensorStream) emitSlot(s int) error {
	if ts.skip > 0 {
		ts.skip--
		return nil
	}
	if err := ts.frames.addSlot(ts.store, s); err != nil {
		return err
	}
	return ts.maybeFlush()
}

func (ts *tensorStream) maybeFlush() error {
	if ts.frames.rows < ts.opts.BatchSize {
		return nil
	}
	return ts.flush()
}

func (ts *tensorStream) flush() error {
	if ts.canceled != nil {
		// Rows drained from the store at the end come without a batch
		// of the query to check the cancel at.
		if err := ts.canceled(); err != nil {
			return err
		}
	}
	ts.sent += int64(ts.frames.rows)
	err := ts.frames.write(ts.w, ts.batch)
	ts.batch++
	return err
}

// runTensor writes the query's rows as the tensor stream, one Write per
// frame, and returns the number of rows written.
func (c *CopyTo) runTensor(w io.Writer) (int64, error) {
	ts := newTensorStream(c.n.Columns(), c.opts.Tensor, w)
	ts.frames.source = c.source
	if c.rng != nil {
		ts.rng = c.rng
	}
	if c.opts.Tensor.Shuffle == plan.ShuffleBuffer {
		ts.bufMem = c.env.account("a tensor stream's shuffle buffer")
		defer ts.bufMem.Close()
	}
	ts.tempFile, ts.spillAt = c.env.tempFile("shuffle-*"), c.env.spillBudget()
	defer func() {
		if c.fetcher != nil {
			c.fetcher.Close()
			c.fetcher = nil
		}
		if ts.spill != nil {
			ts.spill.close()
		}
	}()
	ts.canceled = c.env.canceled
	if ts.opts.Shuffle == plan.ShuffleNone {
		// The OFFSET taken off an in-order query is skipped as
		// START_BATCH's rows are; runExactByID takes an exact shuffle's
		// itself.
		ts.skip += c.offset
		if c.limited {
			ts.end = c.offset + c.limit
		}
	}
	add := func(b *types.Batch) error {
		if err := c.env.canceled(); err != nil {
			return err
		}
		return ts.add(b)
	}
	var err error
	t := c.opts.Tensor
	switch c.read() {
	case plan.ReadByRowID:
		ts.byGroup = true
		err = c.runExactByID(ts)
	case plan.ReadRowGroups:
		var skip func(*storage.RowGroup) (bool, error)
		if skip, err = c.groupSkipper(ts); err != nil {
			return 0, err
		}
		ts.byGroup = true
		// A buffer-shuffled stream resumed at START_BATCH replays the
		// rows it skips from their ids alone (see replayIDs).
		ts.replaying = ts.skip > 0 && t.Shuffle == plan.ShuffleBuffer
		err = c.runGroups(add, skip, ts)
	default:
		if c.op == nil {
			if c.op, err = Build(c.env, c.n.Query); err != nil {
				return 0, err
			}
		}
		if sc := hollowScanner(c.op); sc != nil && t.SharedMemory > 0 {
			c.readHollow(ts, sc)
		}
		err = Drain(c.op, add)
	}
	if err == errStreamEnd {
		err = nil
	}
	if err == nil {
		err = ts.finish()
	}
	if err != nil {
		return 0, err
	}
	return ts.sent, nil
}

// readHollow makes ts's frames take the hollow windows of sc (nil: none)
// as extents.
func (c *CopyTo) readHollow(ts *tensorStream, sc *storage.Scanner) {
	f := ts.frames
	if f.readExtent == nil {
		ctx := c.env.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		db := c.env.DB
		f.readHollow(func(e storage.Extent, dst []byte, scratch *[]byte) error {
			return db.ReadExtent(ctx, e, dst, scratch)
		})
	}
	if sc != nil {
		f.extentOf = sc.Extent
	}
}

// read returns how the stream reads its rows: as the plan says, or for a
// CopyTo made without a stream plan, the query's rows in order.
func (c *CopyTo) read() plan.TensorRead {
	if c.stream == nil || c.groupScan == nil {
		return plan.ReadQuery
	}
	return c.stream.Read
}

// hollowScanner returns the table scan of an in-order stream's query
// (one whose scan the planner made borrow, and perhaps hollow), whose
// hollow windows its frames may take.
func hollowScanner(op Operator) *storage.Scanner {
	if p, ok := op.(*projectOp); ok {
		op = p.in
	}
	if s, ok := op.(*scanOp); ok && s.filter == nil {
		return s.sc
	}
	return nil
}

// groupSkipper returns, for an in-order stream resumed at START_BATCH, a
// function that skips a row group whole while the rows still to skip
// cover it. A fragment's group is counted from its row range when the
// table has no deleted rows and the stream no WHERE or VERSION; otherwise
// its rows are counted by reading their ids and the columns the filter
// needs (groupIDs). nil for a shuffled stream: its order depends on every
// row before (see replayIDs).
func (c *CopyTo) groupSkipper(ts *tensorStream) (func(g *storage.RowGroup) (bool, error), error) {
	t := c.opts.Tensor
	if ts.skip == 0 || t.Shuffle != plan.ShuffleNone {
		return nil, nil
	}
	del, err := c.env.Txn.HasDeletedRows(c.groupScan.Table)
	if err != nil {
		return nil, err
	}
	count := del || t.Version != 0 || c.groupScan.Filter != nil
	return func(g *storage.RowGroup) (bool, error) {
		if !count && g.Kind == storage.GroupFragment {
			// Every row of the range is sent: the rows to skip and those
			// past the end are cut off the range.
			k := min(ts.skip, g.End-g.Start)
			g.Start += k
			ts.skip -= k
			ts.pos += k
			if ts.end >= 0 {
				g.End = min(g.End, g.Start+max(ts.end-ts.pos, 0))
			}
			return g.Start == g.End, nil
		}
		if ts.skip == 0 {
			return false, nil
		}
		var n int64
		switch {
		case count:
			if err := c.groupIDs(g, func(ids []uint64) error {
				n += int64(len(ids))
				return nil
			}); err != nil {
				return false, err
			}
		case g.Kind == storage.GroupFragment:
			n = g.End - g.Start
		default:
			return false, nil
		}
		if n > ts.skip {
			return false, nil
		}
		ts.skip -= n
		ts.pos += n
		return true, nil
	}, nil
}

// projectScan wraps fn so that it sees the columns of the projection above
// the scan, if the query has one, computed from each batch of the scan's.
func (c *CopyTo) projectScan(fn func(*types.Batch) error) (func(*types.Batch) error, error) {
	p, ok := c.n.Query.(*plan.Project)
	if !ok {
		return fn, nil
	}
	evs := make([]evaluator, len(p.Exprs))
	for j, e := range p.Exprs {
		ev, err := c.env.compile(e)
		if err != nil {
			return nil, err
		}
		evs[j] = ev
	}
	view := &types.Batch{Cols: make([]*types.Vec, len(evs))}
	return func(b *types.Batch) error {
		for j, ev := range evs {
			v, err := ev.eval(b)
			if err != nil {
				return err
			}
			view.Cols[j] = v
		}
		view.SetLen(b.Len())
		return fn(view)
	}, nil
}

// rankSeedStream is the PCG stream of shard rank's shuffle of its rows.
func rankSeedStream(rank int) uint64 { return 0x9e3779b97f4a7c15 ^ uint64(rank) }

// groupSeedStream is the PCG stream of the shuffle of row groups; it does
// not depend on the rank, so every shard deals the same order.
const groupSeedStream = 0x6a09e667f3bcc908

// runGroups reads this shard's row groups: the table's groups, in an
// order shuffled with the seed when SHUFFLE is on, split among the shards
// (splitGroups). Each group is one scan, closed before the next opens. A
// fragment's group that skip (when not nil) takes is not read. While ts
// is replaying, groups are read for their row ids only (replayGroup).
func (c *CopyTo) runGroups(fn func(*types.Batch) error, skip func(*storage.RowGroup) (bool, error), ts *tensorStream) error {
	scan := c.groupScan
	groups, err := c.shardGroups()
	if err != nil {
		return err
	}
	t := c.opts.Tensor
	if fn, err = c.projectScan(fn); err != nil {
		return err
	}
	rowBytes, err := c.lateRowBytes(groups)
	if err != nil {
		return err
	}
	// Through the shuffle buffer, and in order through shared memory, the
	// fixed-width columns passed on are read straight into the frames
	// (see tensor_extent.go), into the area or the frames' buffers: the
	// shuffle buffer holds where each value is, not its bytes. A shuffled
	// stream reads its rows one by one, so only from chunks whose checksum
	// blocks hold one row each. (An in-order stream over the socket reads
	// whole chunks, whose buffers its frames borrow.)
	var hollow []int
	if scan.Filter == nil && (t.Shuffle == plan.ShuffleBuffer || t.SharedMemory > 0 && t.Shuffle == plan.ShuffleNone) {
		hollow = c.stream.Hollow
	}
	for k := range groups {
		g := &groups[k]
		if skip != nil {
			skipped, err := skip(g)
			if err != nil {
				return err
			}
			if skipped {
				continue
			}
		}
		read, drop := fn, 0
		if ts.replaying {
			taken, all, err := c.replayGroup(ts, g)
			if err != nil {
				return err
			}
			if ts.replaying || taken == all {
				continue
			}
			// The replay ended inside this group: its first rows
			// are in the buffer already.
			drop = taken
		} else if rowBytes > 0 && g.Kind == storage.GroupFragment {
			done, err := c.lateGroup(g, rowBytes, fn)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		op, err := newGroupScan(c.env, scan, g, t.Version, hollow, t.Shuffle != plan.ShuffleNone)
		if err != nil {
			return err
		}
		if len(hollow) > 0 {
			c.readHollow(ts, op.sc)
		} else {
			ts.frames.extentOf = nil
		}
		if drop > 0 {
			read, ts.frames.extentOf = dropRows(drop, fn, ts.frames.extentOf)
		}
		err = Drain(op, read)
		op.Close()
		if err != nil {
			return err
		}
	}
	if ts.replaying {
		// Every row was skipped or is in the buffer.
		return c.fillBuffer(ts)
	}
	return nil
}

// shardGroups returns this shard's row groups, in the order it reads
// them: the table's groups, shuffled with the seed when SHUFFLE is on,
// split among the shards by splitGroups.
func (c *CopyTo) shardGroups() ([]storage.RowGroup, error) {
	return c.shardGroupsOf(c.opts.Tensor)
}

// shardGroupsOf is shardGroups for the seed, shuffle and shard of t.
func (c *CopyTo) shardGroupsOf(t plan.TensorOptions) ([]storage.RowGroup, error) {
	groups, err := c.env.Txn.RowGroups(c.groupScan.Table)
	if err != nil {
		return nil, err
	}
	if t.Shuffle != plan.ShuffleNone {
		rng := rand.New(rand.NewPCG(t.Seed, groupSeedStream))
		rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	}
	if t.World <= 1 {
		return groups, nil
	}
	return splitGroups(groups, t.Rank, t.World, t.DropLast), nil
}

// splitGroups returns shard rank of world's part of groups, in their
// order. The fragment groups, laid end to end by their row ranges, are cut
// into world runs whose lengths differ by one row at most: shard rank gets
// the rank-th, so a shard's first and last groups may be parts of groups,
// and the shards' row counts are equal (to a row) when no row is deleted
// or filtered out. With even (DROP_LAST), every run is ⌊N/world⌋ rows
// long and the last N mod world rows are left out, as PyTorch's
// DistributedSampler(drop_last=True) leaves them: the ranks of a
// DistributedDataParallel model then take the same number of steps. A
// group without a row range (the buffered rows, the transaction's own
// inserts) cannot be cut: such groups go whole to the shards in turn,
// from shard 0.
func splitGroups(groups []storage.RowGroup, rank, world int, even bool) []storage.RowGroup {
	var n int64
	for _, g := range groups {
		if g.Kind == storage.GroupFragment {
			n += g.End - g.Start
		}
	}
	lo, hi := n*int64(rank)/int64(world), n*int64(rank+1)/int64(world)
	if even {
		lo, hi = n/int64(world)*int64(rank), n/int64(world)*int64(rank+1)
	}
	var mine []storage.RowGroup
	var at int64 // where the next fragment group starts, end to end
	whole := 0
	for _, g := range groups {
		if g.Kind != storage.GroupFragment {
			if whole%world == rank {
				mine = append(mine, g)
			}
			whole++
			continue
		}
		size := g.End - g.Start
		if a, b := max(lo, at), min(hi, at+size); a < b {
			part := g
			part.Start, part.End = g.Start+a-at, g.Start+b-at
			mine = append(mine, part)
		}
		at += size
	}
	return mine
}

// runExactByID streams an exact shuffle of a table's rows holding only
// their ids: it reads the shard's row ids, permutes them as finish
// permutes the rows of the store (the same draws, so the same order), and
// reads the rows by id a batch at a time as they are sent. The server's
// memory grows by 8 bytes a row instead of by the rows, and the rows that
// START_BATCH skips are never read.
func (c *CopyTo) runExactByID(ts *tensorStream) error {
	t := c.opts.Tensor
	rank, world := t.Rank, t.World
	if c.global {
		// Every shard draws the unsharded stream's permutation of all the
		// rows, then takes its rows of the LIMIT by position.
		t.Rank, t.World = 0, 1
		ts.rng = rand.New(rand.NewPCG(t.Seed, rankSeedStream(0)))
	}
	groups, err := c.shardGroupsOf(t)
	if err != nil {
		return err
	}
	// The fixed-width columns' values are read where they are stored (see
	// tensor_exact.go), into the area or the frames' buffers.
	ex, err := c.extentRows(ts)
	if err != nil {
		return err
	}
	if ex != nil {
		defer ex.close()
	}
	var ids []uint64
	for k := range groups {
		if err := c.groupIDs(&groups[k], func(part []uint64) error {
			if err := checkShuffleIDs(len(ids) + len(part)); err != nil {
				return err
			}
			ids = append(ids, part...)
			return nil
		}); err != nil {
			return err
		}
	}
	// A batch of ids is read in storage order (rows of one chunk
	// together) into one reused batch, then sent in the permutation's.
	pending := make([]uint64, 0, types.BatchSize)
	sorted := make([]uint64, 0, types.BatchSize)
	var found []uint64
	emit, err := c.projectScan(func(b *types.Batch) error {
		for _, id := range pending {
			i, _ := slices.BinarySearch(found, id)
			if err := ts.emitRow(b.Cols, i); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var buf *types.Batch
	send := func() error {
		if err := c.env.canceled(); err != nil {
			return err
		}
		sorted = append(sorted[:0], pending...)
		slices.Sort(sorted)
		var err error
		out := buf
		if ex != nil && !ex.off {
			// ex's own batch: buf stays fetchRows's.
			if out, err = ex.fetch(sorted); err != nil {
				return err
			}
			found = sorted
		} else {
			if buf, found, err = c.fetchRows(sorted, buf); err != nil {
				return err
			}
			out = buf
		}
		if len(found) != len(pending) {
			return pgerror.AssertionFailedf("exact shuffle: %d of %d rows found by id", len(found), len(pending))
		}
		err = emit(out)
		pending = pending[:0]
		return err
	}
	// Fisher-Yates from the end, as finish drains the store. A LIMIT
	// taken off the query (plan.TensorStream.Limit) ends the permutation
	// early; its OFFSET's rows are drawn and not sent.
	end := 0
	if c.limited && c.offset+c.limit < int64(len(ids)) {
		end = len(ids) - int(c.offset+c.limit)
	}
	offset, pos := c.offset, 0
	// The first fetch is one frame's rows, so that it goes out without
	// waiting for the reads of the next ones.
	want := min(ts.opts.BatchSize, cap(pending))
	for k := len(ids) - 1; k >= end; k-- {
		s := ts.rng.IntN(k + 1)
		ids[s], ids[k] = ids[k], ids[s]
		if offset > 0 {
			offset--
			continue
		}
		if pos++; c.global && (pos-1)%world != rank {
			continue
		}
		if ts.skip > 0 {
			ts.skip--
			continue
		}
		if pending = append(pending, ids[k]); len(pending) == want {
			if err := send(); err != nil {
				return err
			}
			want = cap(pending)
		}
	}
	if len(pending) > 0 {
		return send()
	}
	return nil
}

// replayGroup replays the rows of group g by id (replayIDs), reading only
// their ids and the columns the filter needs (groupIDs). When the last row
// to skip goes out, it fills the buffer with its rows' values and ends the
// replay. It returns how many of the rows the group sends were taken and
// how many it sends.
func (c *CopyTo) replayGroup(ts *tensorStream, g *storage.RowGroup) (taken, all int, err error) {
	err = c.groupIDs(g, func(ids []uint64) error {
		all += len(ids)
		if !ts.replaying {
			return nil
		}
		taken += ts.replayIDs(ids)
		if ts.skip == 0 {
			return c.fillBuffer(ts)
		}
		return nil
	})
	return taken, all, err
}

// fetchBlock is about what fetching one row by id from an uncompressed
// chunk costs, in bytes scanned: the checksum block around it (16 kB, or
// the row when it is wider; 64 kB in chunks written before 2026-11-24)
// and the work of a lookup.
const fetchBlock = 64 << 10

// lateRowBytes returns the stored bytes a row of the stream's columns
// takes on average, when its WHERE reads few enough of them (a sixteenth
// of the bytes or less) that finding the passing rows first and reading
// only them can pay; 0 otherwise.
func (c *CopyTo) lateRowBytes(groups []storage.RowGroup) (float64, error) {
	scan := c.groupScan
	if scan.Filter == nil {
		return 0, nil
	}
	narrow := c.idScan()
	if narrow == scan {
		return 0, nil
	}
	all, err := c.env.Txn.StoredBytes(scan.Table, scan.Cols)
	if err != nil {
		return 0, err
	}
	some, err := c.env.Txn.StoredBytes(scan.Table, narrow.Cols)
	if err != nil {
		return 0, err
	}
	var a, n, rows int64
	for _, b := range all {
		a += b
	}
	for _, b := range some {
		n += b
	}
	for _, g := range groups {
		if g.Kind == storage.GroupFragment {
			rows += g.End - g.Start
		}
	}
	if rows == 0 || a == 0 || n*16 > a {
		return 0, nil
	}
	return float64(a) / float64(rows), nil
}

// lateGroup sends the rows of fragment group g that pass the WHERE by
// reading the columns the WHERE needs first and then only the passing
// rows, by id, when that reads less than scanning the group: each row
// fetched costs about a fetchBlock (twice, for the work per row), each
// row scanned rowBytes. It reports whether it did; if not, the group is
// to be scanned.
func (c *CopyTo) lateGroup(g *storage.RowGroup, rowBytes float64, fn func(*types.Batch) error) (bool, error) {
	c.lateIDs = c.lateIDs[:0]
	if err := c.groupIDs(g, func(ids []uint64) error {
		c.lateIDs = append(c.lateIDs, ids...)
		return nil
	}); err != nil {
		return false, err
	}
	if float64(len(c.lateIDs))*2*max(fetchBlock, rowBytes) > float64(g.End-g.Start)*rowBytes {
		return false, nil
	}
	for lo := 0; lo < len(c.lateIDs); lo += types.BatchSize {
		part := c.lateIDs[lo:min(len(c.lateIDs), lo+types.BatchSize)]
		b, found, err := c.fetchRows(part, c.lateBuf)
		if err != nil {
			return false, err
		}
		c.lateBuf = b
		if len(found) != len(part) {
			return false, pgerror.AssertionFailedf("reading the rows that pass: %d of %d found by id", len(found), len(part))
		}
		if err := fn(b); err != nil {
			return false, err
		}
	}
	return true, nil
}

// groupIDs passes fn, batch by batch, the ids of the rows of group g that
// the stream sends: visible in the version read and passing the filter.
// It reads the row ids and only the columns the filter needs (idScan).
func (c *CopyTo) groupIDs(g *storage.RowGroup, fn func(ids []uint64) error) error {
	op, err := newGroupScan(c.env, c.idScan(), g, c.opts.Tensor.Version, nil, false)
	if err != nil {
		return err
	}
	defer op.Close()
	for {
		b, err := op.Next()
		if err != nil || b == nil {
			return err
		}
		if err := fn(op.ids); err != nil {
			return err
		}
	}
}

// extentRows returns the exactRows that fetch the group scan's rows by id
// with their fixed-width values as extents, ts's frames taking them
// (rowExtent), or nil when the scan has a filter or no such column.
func (c *CopyTo) extentRows(ts *tensorStream) (*exactRows, error) {
	if c.groupScan.Filter != nil {
		return nil, nil
	}
	ex, err := c.newExactRows(c.groupScan, c.stream.Hollow)
	if ex == nil || err != nil {
		return nil, err
	}
	c.readHollow(ts, nil)
	ts.frames.rowExtent = ex.rowExtent
	return ex, nil
}

// fillBuffer ends a replay: it reads the values of the rows whose ids the
// replay left in the buffer's slots, by id, into the slots. The
// fixed-width columns that the buffer holds as extents when it scans
// (see runGroups) are located, not read: the slots take where their
// values are stored (as an exact shuffle's rows do, exactRows), so a
// resumed stream holds no more in memory than one from the start.
func (c *CopyTo) fillBuffer(ts *tensorStream) error {
	ids := ts.slotIDs
	ex, err := c.extentRows(ts)
	if err != nil {
		return err
	}
	if ex != nil {
		defer ex.close()
		defer func() { ts.frames.rowExtent = nil }()
	}
	base := 0
	put, err := c.projectScan(func(b *types.Batch) error {
		for i := range b.Len() {
			if err := ts.store.set(base+i, b.Cols, i, ts.frames); err != nil {
				return err
			}
			if err := ts.checkShuffleBuffer(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var b *types.Batch
	for ; base < len(ids); base += types.BatchSize {
		part := ids[base:min(len(ids), base+types.BatchSize)]
		if ex != nil && !ex.off {
			out, err := ex.fetch(part) // checks that every row is found
			if err != nil {
				return err
			}
			if err := put(out); err != nil {
				return err
			}
			continue
		}
		ts.frames.rowExtent = nil
		var found []uint64
		var err error
		if b, found, err = c.fetchRows(part, b); err != nil {
			return err
		}
		if len(found) != len(part) {
			return pgerror.AssertionFailedf("resuming the stream: %d of %d buffered rows found", len(found), len(part))
		}
		if err := put(b); err != nil {
			return err
		}
	}
	ts.replaying, ts.slotIDs = false, nil
	return nil
}

// idScan returns the scan that finds the ids of the rows the stream
// sends (plan.TensorStream.IDScan): the group scan narrowed to the
// columns its filter reads, or the group scan itself when the filter
// cannot be rewritten.
func (c *CopyTo) idScan() *plan.Scan {
	if c.stream.IDScan == nil {
		return c.groupScan
	}
	return c.stream.IDScan
}

// fetchRows reads the rows of the group scan's table with the given ids
// into dst (see storage.RowFetcher), through one fetcher for the whole
// stream, closed by runTensor.
func (c *CopyTo) fetchRows(ids []uint64, dst *types.Batch) (*types.Batch, []uint64, error) {
	if c.fetcher == nil {
		scan := c.groupScan
		rf, err := c.env.Txn.NewRowFetcher(scan.Table, scan.Cols, c.opts.Tensor.Version)
		if err != nil {
			return nil, nil, err
		}
		c.fetcher = rf
	}
	return c.fetcher.Fetch(ids, dst)
}

// dropRows wraps fn so that it does not see the first n rows. extentOf,
// when not nil, tells the extents of the scan's hollow windows
// (Scanner.Extent); the second function returned then tells those of
// the windows fn sees, among them the ones dropRows cuts from the scan's.
func dropRows(n int, fn func(*types.Batch) error, extentOf func(*types.Vec) (storage.Extent, bool)) (func(*types.Batch) error, func(*types.Vec) (storage.Extent, bool)) {
	var view *types.Batch
	var src []*types.Vec // the scan's windows view's were cut from
	cut := 0             // the rows cut from them
	drop := func(b *types.Batch) error {
		if n == 0 {
			return fn(b)
		}
		if n >= b.Len() {
			n -= b.Len()
			return nil
		}
		if view == nil {
			view = &types.Batch{Cols: make([]*types.Vec, len(b.Cols))}
			for j := range view.Cols {
				view.Cols[j] = new(types.Vec)
			}
			src = make([]*types.Vec, len(b.Cols))
		}
		for j, v := range b.Cols {
			view.Cols[j].Window(v, n, b.Len())
			src[j] = v
		}
		view.SetLen(b.Len() - n)
		cut, n = n, 0
		return fn(view)
	}
	if extentOf == nil {
		return drop, nil
	}
	return drop, func(v *types.Vec) (storage.Extent, bool) {
		if view != nil {
			for j, w := range view.Cols {
				if w == v {
					e, ok := extentOf(src[j])
					if !ok {
						return storage.Extent{}, false
					}
					return e.Slice(cut, e.Rows), true
				}
			}
		}
		return extentOf(v)
	}
}

// newGroupScan is newScan reading one row group, of version version when
// it is not 0. Without a filter its bytes columns are windows onto the
// chunks (the stream copies rows into its store or sends them as they
// lie).
// hollow lists columns to read as extents (storage.ScanOptions.Hollow),
// with no filter only; rowBlocks limits them to chunks whose checksum
// blocks hold one row each (HollowRowBlocks).
func newGroupScan(env *Env, n *plan.Scan, g *storage.RowGroup, version uint64, hollow []int, rowBlocks bool) (*scanOp, error) {
	s := &scanOp{env: env}
	if n.Filter != nil {
		f, err := env.compile(n.Filter)
		if err != nil {
			return nil, err
		}
		s.filter = f
	}
	if n.Filter != nil {
		hollow = nil
	}
	sc, err := env.Txn.ScanWith(n.Table, storage.ScanOptions{Cols: n.Cols, Preds: n.ZonePreds(), Group: g, AsOf: version, Borrow: n.Filter == nil,
		Hollow: hollow, HollowRowBlocks: rowBlocks})
	if err != nil {
		return nil, err
	}
	s.sc = sc
	return s, nil
}

// checkTensorVersion refuses VERSION for a query that is not a plain scan
// of one table (scan, the stream's table scan, nil), and a version the
// table does not have, before any data is sent.
func checkTensorVersion(env *Env, n *plan.CopyTo, scan *plan.Scan) error {
	v := n.Options.Tensor.Version
	if v == 0 {
		return nil
	}
	if scan == nil || env.Txn == nil {
		return pgerror.New(pgerror.FeatureNotSupported, "COPY option VERSION is only available for a table or a query of one table's rows").
			WithHint("Copy the table, or SELECT its columns or expressions of them with an optional WHERE.")
	}
	sc, err := env.Txn.ScanWith(scan.Table, storage.ScanOptions{AsOf: v})
	if err != nil {
		return err
	}
	sc.Close()
	return nil
}

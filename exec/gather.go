package exec

import (
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// gatherOp runs a plan.Gather: one copy of its pipeline per worker, each
// scanning the row groups (morsels) it takes from a shared counter, and
// hands their batches on as they come. A worker's batch is borrowed from
// its pipeline, so the worker waits until the consumer asks for the next
// batch before it goes on: the pipelines run while the consumer works on
// the batch before.
type gatherOp struct {
	workers []*gatherWorker
	out     chan gatherMsg
	stop    chan struct{}
	wg      sync.WaitGroup
	// held is the worker whose batch the consumer has, -1 for none.
	held    int
	started bool
	running int
	err     error
	closed  bool
	// instruments are the workers' measurements, for EXPLAIN ANALYZE
	// (parent's).
	instruments []*Instruments
	parent      *Instruments
	// shared are the hash tables the workers' joins share.
	shared map[*plan.Join]*sharedBuild
}

type gatherMsg struct {
	w   int
	b   *types.Batch
	err error
}

type gatherWorker struct {
	op   Operator
	next chan struct{} // the consumer is done with the worker's batch
}

// morsels hands out a scan's row groups, each to one worker.
type morsels struct {
	groups []storage.RowGroup
	at     atomic.Int64
}

func (m *morsels) take() (*storage.RowGroup, bool) {
	i := m.at.Add(1) - 1
	if i >= int64(len(m.groups)) {
		return nil, false
	}
	return &m.groups[i], true
}

// morselsOf joins runs of row groups of one fragment into morsels of
// about a share of the table each (two per worker), at least a row group:
// a column chunk holds many row groups' values (8 MB of them), and a scan
// decodes every chunk it touches whole, so a morsel of one row group
// would decode its chunks again and again.
func morselsOf(groups []storage.RowGroup, workers int) []storage.RowGroup {
	var rows int64
	for _, g := range groups {
		rows += g.End - g.Start
	}
	size := max(rows/int64(2*workers), storage.RowGroupRows)
	var out []storage.RowGroup
	for _, g := range groups {
		if n := len(out); n > 0 && g.Kind == storage.GroupFragment && out[n-1].Kind == storage.GroupFragment &&
			out[n-1].Fragment == g.Fragment && out[n-1].End == g.Start && out[n-1].End-out[n-1].Start < size {
			out[n-1].End = g.End
			continue
		}
		out = append(out, g)
	}
	return out
}

func newGather(env *Env, n *plan.Gather) (Operator, error) {
	groups, err := env.Txn.RowGroups(n.Scan.Table)
	if err != nil {
		return nil, err
	}
	workers := min(n.Workers, len(groups))
	if workers < 2 || groups[len(groups)-1].Kind == storage.GroupOwn {
		// Too little to share, or the transaction's own rows, which one
		// scan at a time reads.
		return Build(env, n.Input)
	}
	m := &morsels{groups: morselsOf(groups, workers)}
	g := &gatherOp{out: make(chan gatherMsg, workers), stop: make(chan struct{}), held: -1, parent: env.Instruments,
		shared: make(map[*plan.Join]*sharedBuild)}
	parent, outerMorsels, outerScan, outerShared := env.Instruments, env.morsels, env.morselScan, env.sharedBuilds
	for range workers {
		var ins *Instruments
		if parent != nil {
			ins = parent.child()
			g.instruments = append(g.instruments, ins)
		}
		env.morsels, env.morselScan, env.Instruments, env.sharedBuilds = m, n.Scan, ins, g.shared
		op, err := Build(env, n.Input)
		env.morsels, env.morselScan, env.Instruments, env.sharedBuilds = outerMorsels, outerScan, parent, outerShared
		if err != nil {
			for _, w := range g.workers {
				w.op.Close()
			}
			g.closeShared()
			return nil, err
		}
		g.workers = append(g.workers, &gatherWorker{op: op, next: make(chan struct{}, 1)})
	}
	return g, nil
}

// start starts the workers, when the consumer first asks for rows: a
// join builds its hash table from one input before it reads the other,
// and the other's workers must not hold scans open meanwhile (each holds
// its reads ahead of the storage location's limit on them).
func (g *gatherOp) start() {
	g.started = true
	g.running = len(g.workers)
	for i, w := range g.workers {
		g.wg.Add(1)
		go g.run(i, w)
	}
}

// run feeds the worker's batches to the consumer until its pipeline ends,
// fails or the gather stops.
func (g *gatherOp) run(i int, w *gatherWorker) {
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			g.send(gatherMsg{w: i, err: pgerror.AssertionFailedf("parallel worker: %v\n%s", r, debug.Stack())})
		}
	}()
	for {
		b, err := w.op.Next()
		if !g.send(gatherMsg{w: i, b: b, err: err}) || b == nil || err != nil {
			return
		}
		select {
		case <-w.next:
		case <-g.stop:
			return
		}
	}
}

func (g *gatherOp) send(m gatherMsg) bool {
	select {
	case g.out <- m:
		return true
	case <-g.stop:
		return false
	}
}

func (g *gatherOp) Next() (*types.Batch, error) {
	if g.err != nil {
		return nil, g.err
	}
	if !g.started {
		g.start()
	}
	if g.held >= 0 {
		g.workers[g.held].next <- struct{}{}
		g.held = -1
	}
	for g.running > 0 {
		m := <-g.out
		switch {
		case m.err != nil:
			g.err = m.err
			g.running--
			g.Close()
			return nil, m.err
		case m.b == nil:
			g.running--
		default:
			g.held = m.w
			return m.b, nil
		}
	}
	return nil, nil
}

// Close stops the workers, waits for them and closes their pipelines.
func (g *gatherOp) Close() {
	if g.closed {
		return
	}
	g.closed = true
	close(g.stop)
	g.wg.Wait()
	for _, w := range g.workers {
		w.op.Close()
	}
	g.closeShared()
	for _, ins := range g.instruments {
		g.parent.add(ins)
	}
}

// closeShared gives back what the shared hash tables hold.
func (g *gatherOp) closeShared() {
	for _, s := range g.shared {
		s.acc.Close()
	}
	g.shared = nil
}

// morselScanOp is a worker's scan of a Gather's pipeline: one morsel
// after another, as the worker takes them.
type morselScanOp struct {
	env *Env
	n   *plan.Scan
	m   *morsels
	sc  *storage.Scanner
}

// newMorselScan returns the worker's scan of n, its filter applied.
func newMorselScan(env *Env, n *plan.Scan) (Operator, error) {
	s := &morselScanOp{env: env, n: n, m: env.morsels}
	if n.Filter == nil {
		return s, nil
	}
	f, err := env.compile(n.Filter)
	if err != nil {
		return nil, err
	}
	return &filterOp{env: env, in: s, pred: f}, nil
}

func (s *morselScanOp) Next() (*types.Batch, error) {
	for {
		if err := s.env.canceled(); err != nil {
			return nil, err
		}
		if s.sc == nil {
			g, ok := s.m.take()
			if !ok {
				return nil, nil
			}
			sc, err := s.env.Txn.ScanWith(s.n.Table, storage.ScanOptions{Cols: s.n.Cols, Preds: s.n.ZonePreds(), Group: g})
			if err != nil {
				return nil, err
			}
			s.sc = sc
		}
		b, _, err := s.sc.Next()
		if err != nil {
			return nil, err
		}
		if b != nil {
			return b, nil
		}
		s.sc.Close()
		s.sc = nil
	}
}

func (s *morselScanOp) Close() {
	if s.sc != nil {
		s.sc.Close()
		s.sc = nil
	}
}

package exec

import (
	"time"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// Instruments measure a statement's operators for EXPLAIN ANALYZE, as
// PostgreSQL's per-node instrumentation does: for each plan node, the
// rows its operators emitted, how many of them ran (loops: a correlated
// subquery's plan is built and run again for each outer row) and, with
// timing, the time spent inside them. Build wraps an operator in a
// measuring one only when Env.Instruments is set, so statements run
// otherwise pay nothing for it.
//
// NB: a statement's operators run on one goroutine, so the counts need
// no synchronization; a Gather's workers each count into instruments of
// their own (child), added to the statement's when the Gather closes.
type Instruments struct {
	timing bool
	nodes  map[plan.Node]*plan.Actual
}

// NewInstruments returns instruments that count rows and loops, and with
// timing also read the clock around every call of Next.
func NewInstruments(timing bool) *Instruments {
	return &Instruments{timing: timing, nodes: make(map[plan.Node]*plan.Actual)}
}

// Actual returns what the operators built for n measured: zero Loops
// when none was built, or none was asked for a row (PostgreSQL's "never
// executed").
func (in *Instruments) Actual(n plan.Node) plan.Actual {
	if a := in.nodes[n]; a != nil {
		return *a
	}
	return plan.Actual{}
}

// wrap returns op measured for n.
func (in *Instruments) wrap(n plan.Node, op Operator) Operator {
	a := in.nodes[n]
	if a == nil {
		a = &plan.Actual{}
		in.nodes[n] = a
	}
	return &measuredOp{in: op, actual: a, timing: in.timing}
}

// measuredOp is one loop of a plan node: an operator built for it, whose
// calls of Next it adds to the node's measurements. It does not allocate.
type measuredOp struct {
	in      Operator
	actual  *plan.Actual
	timing  bool
	started bool
}

var _ Operator = (*measuredOp)(nil)

func (m *measuredOp) Next() (*types.Batch, error) {
	if !m.timing {
		b, err := m.in.Next()
		m.count(b, err)
		return b, err
	}
	start := time.Now()
	b, err := m.in.Next()
	d := time.Since(start)
	m.actual.Total += d
	if !m.started {
		// The time to the loop's first batch (or to its end, when it
		// has none), as PostgreSQL's startup time is the time to the
		// first tuple.
		m.actual.Startup += d
	}
	m.count(b, err)
	return b, err
}

// count adds a call's batch to the rows, and the loop to the loops when
// the call is the loop's first.
func (m *measuredOp) count(b *types.Batch, err error) {
	if !m.started {
		m.started = true
		m.actual.Loops++
	}
	if b != nil && err == nil {
		m.actual.Rows += int64(b.Len())
	}
}

func (m *measuredOp) Close() { m.in.Close() }

// child returns instruments for one parallel worker's operators.
func (in *Instruments) child() *Instruments {
	return NewInstruments(in.timing)
}

// add adds what c measured to in.
func (in *Instruments) add(c *Instruments) {
	for n, a := range c.nodes {
		t := in.nodes[n]
		if t == nil {
			t = &plan.Actual{}
			in.nodes[n] = t
		}
		t.Loops += a.Loops
		t.Rows += a.Rows
		t.Startup += a.Startup
		t.Total += a.Total
	}
}

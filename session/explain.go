package session

import (
	"context"
	"fmt"
	"time"

	"github.com/deeplaked/deeplaked/exec"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/planner"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/types"
)

// explainColumns is EXPLAIN's result: one text column.
var explainColumns = []Column{{Name: "QUERY PLAN", Type: types.TypText}}

// execExplain answers EXPLAIN query with the lines of the query's plan
// (plan.ExplainWith), binding the query as it would run. EXPLAIN ANALYZE
// runs it first, in the session's transaction as the query itself would
// run, and shows what each plan node did; an error of the run is the
// statement's, as in PostgreSQL.
func (s *Session) execExplain(ctx context.Context, st *sql.Explain, cat sql.Catalog, w ResultWriter) error {
	if st.Copy != nil {
		return s.explainCopy(st, cat, w)
	}
	start := time.Now()
	node, err := sql.BindSelect(cat, st.Query)
	if err != nil {
		return err
	}
	if err := s.authorizeLocking(node, st.Query.Locking); err != nil {
		return err
	}
	node = s.plan(node)
	planning := time.Since(start)
	opts := plan.ExplainOptions{Verbose: st.Verbose}
	var execution time.Duration
	if st.Analyze {
		ins := exec.NewInstruments(st.Timing)
		start := time.Now()
		if err := s.runDiscarding(ctx, node, ins); err != nil {
			return err
		}
		execution = time.Since(start)
		opts.Actual, opts.Timing = ins.Actual, st.Timing
	}
	lines := plan.ExplainWith(node, opts)
	if st.Summary {
		lines = append(lines, fmt.Sprintf("Planning Time: %.3f ms", millis(planning)))
		if st.Analyze {
			lines = append(lines, fmt.Sprintf("Execution Time: %.3f ms", millis(execution)))
		}
	}
	return writeExplain(w, lines)
}

// explainCopy answers EXPLAIN COPY ... TO STDOUT WITH (FORMAT tensor,
// ...) with how the tensor stream reads its rows, over the plan of the
// query it runs, as the statement would plan them (planner.PlanCopyTo).
func (s *Session) explainCopy(st *sql.Explain, cat sql.Catalog, w ResultWriter) error {
	start := time.Now()
	n, err := sql.BindCopyTo(cat, st.Copy)
	if err != nil {
		return err
	}
	if err := s.authorize(n); err != nil {
		return err
	}
	lines := plan.Explain(planner.PlanCopyTo(n))
	if st.Summary {
		lines = append(lines, fmt.Sprintf("Planning Time: %.3f ms", millis(time.Since(start))))
	}
	return writeExplain(w, lines)
}

// writeExplain sends EXPLAIN's result: one row per line.
func writeExplain(w ResultWriter, lines []string) error {
	if err := w.WriteColumns(explainColumns); err != nil {
		return err
	}
	b := types.NewBatch([]types.Type{types.TypText}, len(lines))
	for _, l := range lines {
		b.Cols[0].AppendString(l)
	}
	b.SetLen(len(lines))
	if err := w.WriteBatch(b); err != nil {
		return err
	}
	return w.WriteComplete("EXPLAIN")
}

// runDiscarding runs the query plan node to its end as runQuery does,
// its operators measured by ins, and drops its rows.
func (s *Session) runDiscarding(ctx context.Context, node plan.Node, ins *exec.Instruments) error {
	env := s.env(ctx)
	defer env.Close()
	env.Instruments = ins
	op, err := exec.Build(env, node)
	if err != nil {
		return err
	}
	defer op.Close()
	return exec.Drain(op, func(*types.Batch) error { return nil })
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

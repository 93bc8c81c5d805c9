package session

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/planner"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/types"
)

// explainColumns is EXPLAIN's result: one text column.
var explainColumns = []Column{{Name: "QUERY PLAN", Type: types.TypText}}

// execExplain answers EXPLAIN query with the lines of the query's plan
// (plan.Explain), binding the query as it would run.
func (s *Session) execExplain(st *sql.Explain, cat sql.Catalog, w ResultWriter) error {
	node, err := sql.BindSelect(cat, st.Query)
	if err != nil {
		return err
	}
	if err := s.authorize(node); err != nil {
		return err
	}
	lines := plan.Explain(planner.Plan(node, s.parallelWorkers()))
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

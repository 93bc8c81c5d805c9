package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Explain is EXPLAIN [(options)] query: the plan of a SELECT, as text.
// ANALYZE is not supported; VERBOSE and COSTS are accepted and change
// nothing (no costs are estimated).
type Explain struct {
	Query *Select
}

func (*Explain) stmt() {}

func convertExplain(s *pg.ExplainStmt) (Stmt, error) {
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch strings.ToLower(d.Defname) {
		case "verbose", "costs", "summary", "timing", "buffers", "settings", "wal":
		case "analyze":
			if d.Arg == nil || constText(d.Arg) != "false" && constText(d.Arg) != "off" {
				return nil, unsupported("EXPLAIN ANALYZE")
			}
		case "format":
			if f := strings.ToLower(constText(d.Arg)); f != "text" {
				return nil, unsupported("EXPLAIN (FORMAT " + strings.ToUpper(f) + ")")
			}
		default:
			return nil, pgerror.Newf(pgerror.SyntaxError, "unrecognized EXPLAIN option \"%s\"", d.Defname)
		}
	}
	sel := s.Query.GetSelectStmt()
	if sel == nil {
		return nil, unsupported("EXPLAIN of a statement other than SELECT")
	}
	q, err := convertSelect(sel)
	if err != nil {
		return nil, err
	}
	return &Explain{Query: q}, nil
}

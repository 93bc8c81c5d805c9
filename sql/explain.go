package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Explain is EXPLAIN [ANALYZE] [(options)] query: the plan of a SELECT,
// as text. COSTS, BUFFERS, SETTINGS and WAL are accepted and change
// nothing (no costs are estimated, no buffers counted).
type Explain struct {
	Query *Select
	// Copy, for EXPLAIN COPY ... TO STDOUT WITH (FORMAT tensor, ...) (a
	// deeplaked extension, without ANALYZE; explain_copy.go), is the
	// tensor stream whose reading is shown; Query is nil then.
	Copy *CopyTo
	// Analyze runs the query, discarding its rows, and shows what each
	// plan node did: its rows and loops, and with Timing its times.
	Analyze bool
	// Timing shows ANALYZE's times per node; on by default with ANALYZE,
	// as in PostgreSQL, where turning it off saves the clock reads.
	Timing bool
	// Summary adds the planning time, and with Analyze the execution
	// time, after the plan; on by default with ANALYZE.
	Summary bool
	// Verbose shows each plan node's output columns and a hash join's
	// keys (plan.ExplainOptions.Verbose).
	Verbose bool
}

func (*Explain) stmt() {}

func convertExplain(s *pg.ExplainStmt) (Stmt, error) {
	st := &Explain{}
	var timing, summary, wal *bool
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		name := strings.ToLower(d.Defname)
		switch name {
		case "format":
			switch f := strings.ToLower(constText(d.Arg)); f {
			case "text":
			case "json", "xml", "yaml":
				return nil, unsupported("EXPLAIN (FORMAT " + strings.ToUpper(f) + ")")
			default:
				return nil, pgerror.Newf(pgerror.InvalidParameterValue, "unrecognized value for EXPLAIN option \"%s\": \"%s\"", d.Defname, constText(d.Arg))
			}
			continue
		case "analyze", "verbose", "costs", "summary", "timing", "buffers", "settings", "wal":
		default:
			return nil, pgerror.Newf(pgerror.SyntaxError, "unrecognized EXPLAIN option \"%s\"", d.Defname)
		}
		on, err := explainBool(d)
		if err != nil {
			return nil, err
		}
		switch name {
		case "analyze":
			st.Analyze = on
		case "verbose":
			st.Verbose = on
		case "timing":
			timing = &on
		case "summary":
			summary = &on
		case "wal":
			wal = &on
		}
	}
	// The checks and defaults of PostgreSQL's ExplainQuery, in its order.
	if wal != nil && *wal && !st.Analyze {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "EXPLAIN option WAL requires ANALYZE")
	}
	st.Timing = st.Analyze
	if timing != nil {
		st.Timing = *timing
	}
	if st.Timing && !st.Analyze {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "EXPLAIN option TIMING requires ANALYZE")
	}
	st.Summary = st.Analyze
	if summary != nil {
		st.Summary = *summary
	}
	sel := s.Query.GetSelectStmt()
	if sel == nil {
		what := "EXPLAIN"
		if st.Analyze {
			what = "EXPLAIN ANALYZE"
		}
		return nil, unsupported(what + " of " + explainedKind(s.Query))
	}
	q, err := convertSelect(sel)
	if err != nil {
		return nil, err
	}
	st.Query = q
	return st, nil
}

// explainBool is an EXPLAIN option's value as PostgreSQL's defGetBoolean
// reads it: none is true; 0 and 1; true, false, on and off in any case.
func explainBool(d *pg.DefElem) (bool, error) {
	if d.Arg == nil {
		return true, nil
	}
	if i := d.Arg.GetInteger(); i != nil {
		switch i.Ival {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
	} else if s := d.Arg.GetString_(); s != nil {
		switch strings.ToLower(s.Sval) {
		case "true", "on":
			return true, nil
		case "false", "off":
			return false, nil
		}
	}
	return false, pgerror.Newf(pgerror.SyntaxError, "%s requires a Boolean value", d.Defname)
}

// explainedKind names the statement EXPLAIN was given, for the error that
// refuses it.
func explainedKind(n *pg.Node) string {
	switch {
	case n.GetInsertStmt() != nil:
		return "INSERT"
	case n.GetUpdateStmt() != nil:
		return "UPDATE"
	case n.GetDeleteStmt() != nil:
		return "DELETE"
	case n.GetMergeStmt() != nil:
		return "MERGE"
	}
	return "a statement other than SELECT"
}

package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// EXPLAIN COPY ... TO STDOUT WITH (FORMAT tensor, ...) shows how a tensor
// stream reads its rows. PostgreSQL's grammar has no EXPLAIN COPY (it is a
// syntax error there, and stays one for other formats): before the query
// string is parsed, the EXPLAIN and its options in front of a COPY are
// blanked out of it, and once the COPY is parsed on its own, they are put
// back round it (explainedCopy).

// explainCopy is the EXPLAIN in front of a COPY statement of a query
// string.
type explainCopy struct {
	// head is the text of the EXPLAIN and its options; copyAt is where
	// the COPY starts.
	head   string
	copyAt int
}

// blankExplainCopies returns query with the EXPLAIN (and its options) in
// front of each COPY statement replaced by spaces, so that every other
// byte keeps its place, and those EXPLAINs; query itself when it has
// none.
func blankExplainCopies(query string) (string, []explainCopy) {
	if !containsFold(query, "explain") {
		return query, nil
	}
	res, err := pg.Scan(query)
	if err != nil {
		// The parser reports it.
		return query, nil
	}
	var toks []*pg.ScanToken
	for _, t := range res.Tokens {
		if t.Token != pg.Token_SQL_COMMENT && t.Token != pg.Token_C_COMMENT {
			toks = append(toks, t)
		}
	}
	var found []explainCopy
	for i := 0; i < len(toks); i++ {
		if toks[i].Token != pg.Token_EXPLAIN || i > 0 && toks[i-1].Token != pg.Token_ASCII_59 {
			continue
		}
		j := i + 1
		if j < len(toks) && toks[j].Token == pg.Token_ASCII_40 {
			// EXPLAIN (options): up to the parenthesis that closes them.
			for depth := 0; j < len(toks); j++ {
				if toks[j].Token == pg.Token_ASCII_40 {
					depth++
				} else if toks[j].Token == pg.Token_ASCII_41 {
					if depth--; depth == 0 {
						j++
						break
					}
				}
			}
		} else {
			for j < len(toks) && (toks[j].Token == pg.Token_ANALYZE || toks[j].Token == pg.Token_ANALYSE || toks[j].Token == pg.Token_VERBOSE) {
				j++
			}
		}
		if j < len(toks) && toks[j].Token == pg.Token_COPY {
			start, at := int(toks[i].Start), int(toks[j].Start)
			found = append(found, explainCopy{head: query[start:at], copyAt: at})
		}
	}
	if len(found) == 0 {
		return query, nil
	}
	b := []byte(query)
	for _, e := range found {
		for k := e.copyAt - len(e.head); k < e.copyAt; k++ {
			b[k] = ' '
		}
	}
	return string(b), found
}

// explainCopyOf returns the EXPLAIN of explains in front of the COPY that
// raw statement raw holds, if any.
func explainCopyOf(explains []explainCopy, raw *pg.RawStmt, size int) (explainCopy, bool) {
	start, end := int(raw.StmtLocation), size
	if raw.StmtLen > 0 {
		end = start + int(raw.StmtLen)
	}
	for _, e := range explains {
		if start <= e.copyAt && e.copyAt < end {
			return e, true
		}
	}
	return explainCopy{}, false
}

// tensorCopyTo reports whether n is a COPY ... TO with FORMAT tensor, the
// one COPY that EXPLAIN shows.
func tensorCopyTo(n *pg.Node) bool {
	c := n.GetCopyStmt()
	if c == nil || c.IsFrom {
		return false
	}
	for _, o := range c.Options {
		if d := o.GetDefElem(); d != nil && d.Defname == "format" && d.Arg != nil {
			if v, ok := optionValue(d.Arg); ok && v == "tensor" {
				return true
			}
		}
	}
	return false
}

// explainedCopy converts the COPY statement n with the EXPLAIN e in front
// of it: EXPLAIN's options are read as in front of a SELECT, and apply to
// the COPY.
func explainedCopy(e explainCopy, n *pg.Node, lim Limits) (Stmt, error) {
	res, err := parseTree(e.head+"\nSELECT 1", lim)
	if err != nil {
		return nil, err
	}
	st, err := convertExplain(res.Stmts[0].Stmt.GetExplainStmt())
	if err != nil {
		return nil, err
	}
	ex := st.(*Explain)
	if ex.Analyze {
		return nil, unsupported("EXPLAIN ANALYZE of COPY")
	}
	cp, err := convertCopy(n.GetCopyStmt())
	if err != nil {
		return nil, err
	}
	ex.Query, ex.Copy = nil, cp.(*CopyTo)
	return ex, nil
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i]|0x20 == w[0] && strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

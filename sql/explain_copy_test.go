package sql

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestParseExplainCopy: EXPLAIN in front of a COPY ... TO with FORMAT
// tensor, among other statements and after comments, wraps the COPY; its
// options are EXPLAIN's. EXPLAIN of any other COPY is the grammar's
// syntax error, and one in a string or a comment is not an EXPLAIN.
func TestParseExplainCopy(t *testing.T) {
	ps, err := Parse("SELECT 'explain copy'; /* explain */ EXPLAIN (COSTS off, SUMMARY) -- copy\n" +
		"COPY (SELECT a FROM t) TO STDOUT WITH (FORMAT tensor, SHARD '0/2'); EXPLAIN VERBOSE COPY t TO STDOUT WITH (FORMAT tensor)")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("got %d statements", len(ps))
	}
	if _, ok := ps[0].Stmt.(*Select); !ok {
		t.Errorf("first statement %T", ps[0].Stmt)
	}
	ex, ok := ps[1].Stmt.(*Explain)
	if !ok || ex.Copy == nil || ex.Query != nil || ex.Copy.Query == nil || !ex.Summary || ex.Analyze {
		t.Fatalf("second statement %#v", ps[1].Stmt)
	}
	if ps[1].SQL[:7] != "/* expl" {
		t.Errorf("statement text %q", ps[1].SQL)
	}
	if ex, ok := ps[2].Stmt.(*Explain); !ok || ex.Copy == nil || ex.Copy.Table != "t" {
		t.Errorf("third statement %#v", ps[2].Stmt)
	}
	for q, want := range map[string]string{
		"explain copy t TO STDOUT":                                     `syntax error at or near "copy"`,
		"EXPLAIN COPY t TO STDOUT WITH (FORMAT csv)":                   `syntax error at or near "COPY"`,
		"EXPLAIN COPY t FROM STDIN WITH (FORMAT tensor)":               `syntax error at or near "COPY"`,
		"SELECT 1; EXPLAIN (ANALYZE) COPY t TO STDOUT (FORMAT binary)": `syntax error at or near "COPY"`,
		"EXPLAIN ANALYZE COPY t TO STDOUT WITH (FORMAT tensor)":        "EXPLAIN ANALYZE of COPY is not supported yet",
		"EXPLAIN (FORMAT json) COPY t TO STDOUT (FORMAT tensor)":       "EXPLAIN (FORMAT JSON) is not supported yet",
	} {
		_, err := Parse(q)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", q, err, want)
		}
		if code := pgerror.GetCode(err); want[0] == 's' && code != pgerror.SyntaxError {
			t.Errorf("%s: code %s", q, code)
		}
	}
}

package session

import (
	"context"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestRewriteCopyToGPU(t *testing.T) {
	for q, want := range map[string]string{
		"COPY t TO GPU":                                         "COPY t TO STDOUT WITH (FORMAT tensor)",
		"copy (select a from t) to gpu":                         "copy (select a from t) to STDOUT WITH (FORMAT tensor)",
		"COPY t\n\tTO   Gpu  WITH ( BATCH_SIZE 4 );":            "COPY t\n\tTO   STDOUT  WITH (FORMAT tensor,  BATCH_SIZE 4 );",
		"COPY t TO /* where */ GPU (SHUFFLE true, SEED 1)":      "COPY t TO /* where */ STDOUT (FORMAT tensor, SHUFFLE true, SEED 1)",
		"COPY t TO GPU WITH (FORMAT tensor, BATCH_SIZE 2)":      "COPY t TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2)",
		"COPY t TO GPU WITH (FORMAT 'tensor')":                  "COPY t TO STDOUT WITH (FORMAT 'tensor')",
		"COPY t TO GPU WITH (FORMAT csv)":                       "COPY t TO STDOUT WITH (FORMAT tensor, FORMAT csv)",
		"COPY t TO GPU WITH ()":                                 "COPY t TO STDOUT WITH (FORMAT tensor)",
		"SELECT 1; COPY t TO GPU; COPY u TO gpu":                "SELECT 1; COPY t TO STDOUT WITH (FORMAT tensor); COPY u TO STDOUT WITH (FORMAT tensor)",
		"COPY (SELECT 'TO GPU' AS x) TO GPU":                    "COPY (SELECT 'TO GPU' AS x) TO STDOUT WITH (FORMAT tensor)",
		"COPY (SELECT E'\\' TO GPU' AS x, $$ TO GPU $$) TO GPU": "COPY (SELECT E'\\' TO GPU' AS x, $$ TO GPU $$) TO STDOUT WITH (FORMAT tensor)",
		// Not the target of a COPY: untouched.
		"SELECT 'COPY t TO GPU'":              "SELECT 'COPY t TO GPU'",
		"COPY t TO 'gpu'":                     "COPY t TO 'gpu'",
		"COPY t TO \"GPU\"":                   "COPY t TO \"GPU\"",
		"SELECT gpu FROM t -- COPY t TO GPU":  "SELECT gpu FROM t -- COPY t TO GPU",
		"COPY gpu TO STDOUT":                  "COPY gpu TO STDOUT",
		"COPY (SELECT 1 AS gpu) TO STDOUT":    "COPY (SELECT 1 AS gpu) TO STDOUT",
		"COPY t FROM STDIN; SELECT 'to gpu'":  "COPY t FROM STDIN; SELECT 'to gpu'",
		"COPY t TO GPUS":                      "COPY t TO GPUS",
		"COPY t TO $tag$x$tag$; SELECT 'gpu'": "COPY t TO $tag$x$tag$; SELECT 'gpu'",
	} {
		if got := rewriteCopyToGPU(q); got != want {
			t.Errorf("%q:\n got %q\nwant %q", q, got, want)
		}
	}
}

func TestCopyToGPU(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (a int, s text)", "")
	mustRun(t, s, "INSERT INTO t VALUES (1, 'TO GPU'), (2, NULL), (3, 'c')", "INSERT 0 3")
	r := &frameWriter{}
	if err := s.ExecSimple(context.Background(), "copy (SELECT a, s FROM t WHERE s <> 'to gpu' OR s IS NULL) to Gpu with (batch_size 2)", r); err != nil {
		t.Fatal(err)
	}
	if got := join(r.out); got != "copy out binary=true columns=2; COPY 3" || len(r.frames) != 2 {
		t.Fatalf("%s, %d frames", got, len(r.frames))
	}
	// The extended protocol rewrites too.
	if _, err := s.Prepare("p", "COPY t TO GPU", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.ExecSimple(context.Background(), "COPY t TO GPU WITH (FORMAT csv)", &recorder{}); pgerror.GetCode(err) != pgerror.SyntaxError {
		t.Errorf("FORMAT csv TO GPU: %v", err)
	}
}

package sql

import (
	"errors"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// FuzzParse runs the parse entry point on arbitrary text: it must return a
// statement list or a pgerror, never crash or hang.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"SELECT 1",
		"SELECT 1+1*2-3/4%5^6, 'a'||'b', NOT true AND false OR a IS NULL",
		"SELECT CASE WHEN a < 1 THEN (SELECT 1) ELSE -a END FROM t WHERE a IN (1,2,3) AND b BETWEEN 1 AND 2",
		"SELECT ARRAY[[1,2],[3,4]], '{{1},{2}}'::int[], ROW(1,2), abs(abs(-1))::int8",
		`SELECT j->'a'->>'b', e <-> '[1,2,3]' FROM "t""x" ORDER BY e <-> '[1,2,3]' LIMIT 5`,
		"SELECT $$a$$, $tag$ ( $tag$, E'\\'', 'it''s' -- ((\n/* /* ( */ */",
		"CREATE TABLE t (id serial PRIMARY KEY, a int DEFAULT 1+2, v vector(3))",
		"INSERT INTO t VALUES (1, 2), (3, 4) RETURNING *; UPDATE t SET a = a + 1; DELETE FROM t",
		"COPY t TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 4)",
		"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 3) SELECT * FROM r",
		"SELECT " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
		"SELECT " + strings.Repeat("1+", 300) + "1",
		"SET max_stack_depth = '1MB'; SHOW max_stack_depth",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_, err := Parse(q)
		var pe *pgerror.Error
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("%q: error without a SQLSTATE: %v", q, err)
		}
	})
}

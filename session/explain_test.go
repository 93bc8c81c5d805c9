package session

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// explainLines runs an EXPLAIN statement and returns its plan's lines.
func explainLines(t *testing.T, s *Session, q string) []string {
	t.Helper()
	got, err := run(t, s, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	parts := strings.Split(got, "; ")
	if len(parts) < 3 || parts[0] != "columns QUERY PLAN:text" || parts[len(parts)-1] != "EXPLAIN" {
		t.Fatalf("%s: %s", q, got)
	}
	return parts[1 : len(parts)-1]
}

func explainTables(t *testing.T) *Session {
	t.Helper()
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE orders (id int PRIMARY KEY, cust int, total int)", "")
	mustRun(t, s, "CREATE TABLE cust (id int PRIMARY KEY, name text)", "")
	mustRun(t, s, "INSERT INTO orders SELECT i, i % 40, i * 3 FROM generate_series(1, 3000) i", "")
	mustRun(t, s, "INSERT INTO cust SELECT i, 'c' || i FROM generate_series(0, 49) i", "")
	return s
}

var (
	nodeLine = regexp.MustCompile(`^( *->  )?[A-Z][^(]*[a-z] \(actual time=(\d+\.\d{3})\.\.(\d+\.\d{3}) rows=(\d+) loops=(\d+)\)$`)
	// A detail, or an InitPlan's or SubPlan's label.
	detailLine = regexp.MustCompile(`^ +([A-Z][A-Za-z -]+: .+|(InitPlan|SubPlan) \d+)$`)
	summary    = regexp.MustCompile(`^(Planning|Execution) Time: \d+\.\d{3} ms$`)
)

// TestExplainAnalyzeTiming checks the shape of EXPLAIN ANALYZE with its
// times: each node's line ends with its actual times (the first no later
// than the total, a child's total within its parent's), rows and loops,
// and the summary follows.
func TestExplainAnalyzeTiming(t *testing.T) {
	s := explainTables(t)
	lines := explainLines(t, s, `EXPLAIN ANALYZE
		SELECT c.name, count(*), sum(o.total) FROM orders o JOIN cust c ON o.cust = c.id
		WHERE o.total > (SELECT avg(total) FROM orders) GROUP BY c.name ORDER BY 3 DESC LIMIT 5`)
	if len(lines) < 4 || !strings.HasPrefix(lines[len(lines)-2], "Planning Time: ") || !strings.HasPrefix(lines[len(lines)-1], "Execution Time: ") {
		t.Fatalf("no summary:\n%s", strings.Join(lines, "\n"))
	}
	var nodes int
	top := -1.0
	for _, l := range lines {
		m := nodeLine.FindStringSubmatch(l)
		switch {
		case m != nil:
			nodes++
			first, _ := strconv.ParseFloat(m[2], 64)
			total, _ := strconv.ParseFloat(m[3], 64)
			if first > total {
				t.Errorf("first batch after the end: %s", l)
			}
			if top < 0 {
				top = total
				if m[4] != "5" || m[5] != "1" {
					t.Errorf("the limit: %s", l)
				}
			} else if total > top {
				t.Errorf("a node's time beyond the whole plan's: %s", l)
			}
		case detailLine.MatchString(l), summary.MatchString(l):
		default:
			t.Errorf("line of no known shape: %q", l)
		}
	}
	if nodes < 6 {
		t.Errorf("%d nodes:\n%s", nodes, strings.Join(lines, "\n"))
	}
}

// TestExplainAnalyzeRuns checks that EXPLAIN ANALYZE runs the query: the
// top node's rows are the query's, the run takes as long as the query
// takes, and an error of the run is the statement's.
func TestExplainAnalyzeRuns(t *testing.T) {
	s := explainTables(t)
	for _, c := range []struct{ q, count string }{
		{"SELECT * FROM orders WHERE total % 7 = 1", "SELECT count(*) FROM orders WHERE total % 7 = 1"},
		{"SELECT o.id FROM orders o JOIN cust c ON o.cust = c.id WHERE c.name LIKE 'c1%'", "SELECT count(*) FROM orders o JOIN cust c ON o.cust = c.id WHERE c.name LIKE 'c1%'"},
		{"SELECT cust, max(total) FROM orders GROUP BY cust", "SELECT count(DISTINCT cust) FROM orders"},
		{"SELECT * FROM orders WHERE total < 0", "SELECT 0"},
	} {
		lines := explainLines(t, s, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF) "+c.q)
		got, err := run(t, s, c.count)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Split(got, "; ")[1]
		if want := " (actual rows=" + n + " loops=1)"; !strings.HasSuffix(lines[0], want) {
			t.Errorf("%s: top line %q, want it to end %q", c.q, lines[0], want)
		}
	}

	// The time of a query that sleeps.
	lines := explainLines(t, s, "EXPLAIN (ANALYZE, COSTS OFF) SELECT pg_sleep(0.05)")
	m := nodeLine.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("%q", lines[0])
	}
	if total, _ := strconv.ParseFloat(m[3], 64); total < 50 {
		t.Errorf("pg_sleep(0.05) took %v ms", total)
	}
	exec := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "Execution Time: "), " ms")
	if ms, err := strconv.ParseFloat(exec, 64); err != nil || ms < 50 {
		t.Errorf("execution time %q", lines[len(lines)-1])
	}

	// A row that divides by zero fails the run, and so the statement;
	// EXPLAIN alone does not run the query.
	mustRun(t, s, "CREATE TABLE z (x int)", "")
	mustRun(t, s, "INSERT INTO z VALUES (1), (0)", "")
	wantCode(t, s, "EXPLAIN ANALYZE SELECT 10 / x FROM z", pgerror.DivisionByZero)
	wantCode(t, s, "EXPLAIN (ANALYZE on, TIMING off) SELECT * FROM z WHERE 10 / x > 1", pgerror.DivisionByZero)
	explainLines(t, s, "EXPLAIN SELECT 10 / x FROM z")
	explainLines(t, s, "EXPLAIN (ANALYZE) SELECT 10 / x FROM z WHERE x <> 0")
}

// TestExplainAnalyzeInTransaction checks that EXPLAIN ANALYZE runs in the
// session's transaction: it sees the block's own rows, and its error
// fails the block.
func TestExplainAnalyzeInTransaction(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (x int)", "")
	mustRun(t, s, "INSERT INTO t VALUES (1), (2)", "")
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, "INSERT INTO t VALUES (3), (0)", "")
	lines := explainLines(t, s, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF) SELECT * FROM t")
	if want := []string{"Seq Scan on t (actual rows=4 loops=1)"}; strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", lines, want)
	}
	wantCode(t, s, "EXPLAIN ANALYZE SELECT 1 / x FROM t", pgerror.DivisionByZero)
	wantCode(t, s, "SELECT 1", pgerror.InFailedSQLTransaction)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	lines = explainLines(t, s, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF) SELECT * FROM t")
	if lines[0] != "Seq Scan on t (actual rows=2 loops=1)" {
		t.Fatalf("after ROLLBACK: %q", lines)
	}
}

// TestExplainOptions checks the options as PostgreSQL reads them: their
// Boolean values, defaults, and the ones that need ANALYZE.
func TestExplainOptions(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (x int)", "")
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"EXPLAIN SELECT x FROM t", []string{"Seq Scan on t"}},
		{"EXPLAIN (ANALYZE false, TIMING off) SELECT x FROM t", []string{"Seq Scan on t"}},
		{"EXPLAIN (ANALYZE 1, TIMING 0, SUMMARY off, VERBOSE, COSTS off, BUFFERS) SELECT x FROM t", []string{"Seq Scan on t (actual rows=0 loops=1)", "  Output: x"}},
		{"EXPLAIN (ANALYZE TRUE, TIMING FALSE, SUMMARY FALSE, FORMAT TEXT) SELECT x FROM t WHERE x > 1", []string{"Seq Scan on t (actual rows=0 loops=1)", "  Filter: (x > '1'::integer)"}},
	} {
		if got := explainLines(t, s, c.q); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
	lines := explainLines(t, s, "EXPLAIN (SUMMARY) SELECT x FROM t")
	if len(lines) != 2 || !summary.MatchString(lines[1]) || !strings.HasPrefix(lines[1], "Planning") {
		t.Errorf("SUMMARY without ANALYZE: %q", lines)
	}
	lines = explainLines(t, s, "EXPLAIN ANALYZE VERBOSE SELECT x FROM t")
	if len(lines) != 4 || !nodeLine.MatchString(lines[0]) || lines[1] != "  Output: x" {
		t.Errorf("EXPLAIN ANALYZE VERBOSE: %q", lines)
	}
	for _, c := range []struct {
		q    string
		code pgerror.Code
	}{
		{"EXPLAIN (TIMING) SELECT x FROM t", pgerror.InvalidParameterValue},
		{"EXPLAIN (WAL) SELECT x FROM t", pgerror.InvalidParameterValue},
		{"EXPLAIN (ANALYZE maybe) SELECT x FROM t", pgerror.SyntaxError},
		{"EXPLAIN (ANALYZE 2) SELECT x FROM t", pgerror.SyntaxError},
		{"EXPLAIN (COLOR) SELECT x FROM t", pgerror.SyntaxError},
		{"EXPLAIN (FORMAT json) SELECT x FROM t", pgerror.FeatureNotSupported},
		{"EXPLAIN (FORMAT html) SELECT x FROM t", pgerror.InvalidParameterValue},
		{"EXPLAIN ANALYZE INSERT INTO t VALUES (1)", pgerror.FeatureNotSupported},
		{"EXPLAIN ANALYZE UPDATE t SET x = 2", pgerror.FeatureNotSupported},
		{"EXPLAIN ANALYZE DELETE FROM t", pgerror.FeatureNotSupported},
	} {
		wantCode(t, s, c.q, c.code)
	}
	// A refused EXPLAIN ANALYZE of INSERT wrote nothing.
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 0; SELECT 1")
}

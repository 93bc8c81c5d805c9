package session

import (
	"context"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/storage"
)

// TestParallelAggregate runs aggregates over a table of several row
// groups on disk with and without workers, EXPLAIN ANALYZE included: the
// answers agree, and the workers' rows add up to the table's.
func TestParallelAggregate(t *testing.T) {
	db, err := storage.Open(storage.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := connect(t, NewEngine(db, nil), "u")
	mustRun(t, s, "CREATE TABLE m (id int PRIMARY KEY, g int, x numeric(10,2))", "")
	mustRun(t, s, "INSERT INTO m SELECT i, i % 5, i / 8.0 FROM generate_series(1, 70000) i", "")
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := "SELECT g, count(*), sum(x), min(x), max(id) FROM m WHERE id % 3 <> 0 GROUP BY g ORDER BY g"
	mustRun(t, s, "SET max_parallel_workers_per_gather = 4", "")
	par, err := run(t, s, q)
	if err != nil {
		t.Fatal(err)
	}
	lines := explainLines(t, s, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM m WHERE x > 1")
	plan := strings.Join(lines, "\n")
	// Each worker counts its rows (a partial aggregate, with a row for
	// each worker that read some), and the final aggregate adds them up.
	if !strings.Contains(plan, "Finalize Aggregate (actual rows=1 loops=1)") || !strings.Contains(plan, "Partial Aggregate (actual rows=") ||
		!strings.Contains(plan, "Seq Scan on m (actual rows=17498 loops=4)") {
		t.Errorf("EXPLAIN ANALYZE of a parallel scan:\n%s", plan)
	}
	mustRun(t, s, "SET max_parallel_workers_per_gather = 0", "")
	if !strings.Contains(strings.Join(explainLines(t, s, "EXPLAIN "+q), "\n"), "Seq Scan") {
		t.Fatal("no plan")
	}
	serial, err := run(t, s, q)
	if err != nil {
		t.Fatal(err)
	}
	if par != serial || !strings.Contains(serial, "; 0|9334|40839190.21|0.63|70000; ") {
		t.Errorf("parallel %s\nserial %s", par, serial)
	}
}

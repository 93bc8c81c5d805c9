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

// TestParallelJoin runs joins of a table of several row groups with a
// smaller one, with and without workers: the workers probe one hash
// table (Parallel Hash Join) and aggregate their rows apart, and every
// kind of join gives the serial answer.
func TestParallelJoin(t *testing.T) {
	db, err := storage.Open(storage.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := connect(t, NewEngine(db, nil), "u")
	mustRun(t, s, "CREATE TABLE f (id int PRIMARY KEY, d int, x numeric(10,2))", "")
	mustRun(t, s, "CREATE TABLE d (id int PRIMARY KEY, name text, grp int)", "")
	mustRun(t, s, "INSERT INTO f SELECT i, i % 1200, i / 8.0 FROM generate_series(1, 70000) i", "")
	mustRun(t, s, "INSERT INTO d SELECT i, 'd' || i, i % 7 FROM generate_series(0, 999) i", "")
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	queries := []string{
		"SELECT d.grp, count(*), sum(f.x), min(d.name) FROM f JOIN d ON f.d = d.id GROUP BY d.grp ORDER BY 1",
		"SELECT count(*), count(d.id), sum(f.x) FROM f LEFT JOIN d ON f.d = d.id",
		"SELECT count(*), sum(x) FROM f WHERE EXISTS (SELECT 1 FROM d WHERE d.id = f.d AND d.grp = 3)",
		"SELECT count(*), sum(x) FROM f WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.id = f.d)",
		"SELECT count(*) FROM f WHERE d IN (SELECT id FROM d WHERE grp < 2)",
	}
	mustRun(t, s, "SET max_parallel_workers_per_gather = 4", "")
	plan := strings.Join(explainLines(t, s, "EXPLAIN "+queries[0]), "\n")
	if !strings.Contains(plan, "Parallel Hash Join") || !strings.Contains(plan, "Partial HashAggregate") {
		t.Fatalf("no parallel join:\n%s", plan)
	}
	var par []string
	for _, q := range queries {
		r, err := run(t, s, q)
		if err != nil {
			t.Fatal(err)
		}
		par = append(par, r)
	}
	mustRun(t, s, "SET max_parallel_workers_per_gather = 0", "")
	for i, q := range queries {
		r, err := run(t, s, q)
		if err != nil {
			t.Fatal(err)
		}
		if r != par[i] {
			t.Errorf("%s:\nparallel %s\nserial   %s", q, par[i], r)
		}
	}
}

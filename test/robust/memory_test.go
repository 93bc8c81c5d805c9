package robust

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

// memLimit is the --memory-limit of these probes.
const memLimit = 512 << 20

func memServer(t *testing.T) (*proctest.Server, *pgx.Conn) {
	t.Helper()
	s := proctest.Start(t, nil, "--memory-limit", "512MB")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN("postgres", "", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return s, c
}

// query runs q and returns its first value as text, or its SQLSTATE.
func query(t *testing.T, c *pgx.Conn, q string) (val, code string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	start := time.Now()
	err := c.QueryRow(ctx, q).Scan(&val)
	d = time.Since(start)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		t.Logf("%.60s: %s %s (%s) in %v", q, pe.Code, pe.Message, pe.Detail, d.Round(time.Millisecond))
		return "", pe.Code, d
	}
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	t.Logf("%.60s: %.40s in %v", q, val, d.Round(time.Millisecond))
	return val, "", d
}

// underLimit checks that the server is alive and its peak resident memory
// stayed under the limit.
func underLimit(t *testing.T, s *proctest.Server) {
	t.Helper()
	if !s.Alive() {
		t.Fatalf("the server died:\n%s", s.Log())
	}
	cur, peak := s.RSS(t)
	t.Logf("resident %d MB, peak %d MB (limit %d MB)", cur>>20, peak>>20, memLimit>>20)
	if peak > memLimit {
		t.Fatalf("peak resident memory %d MB passed the %d MB limit", peak>>20, memLimit>>20)
	}
}

// TestMemoryLimitShown: SHOW memory_limit gives --memory-limit.
func TestMemoryLimitShown(t *testing.T) {
	_, c := memServer(t)
	if v, code, _ := query(t, c, "SHOW memory_limit"); v != "512MB" {
		t.Fatalf("memory_limit %q (%s), want 512MB", v, code)
	}
}

// TestRepeatHuge: repeat('x', 1e9) fails at once (a 1 GB value cannot fit
// in a 512 MB server: 53200; past a field's 1 GB: 54000) without
// allocating it, and the server stays under its limit.
func TestRepeatHuge(t *testing.T) {
	s, c := memServer(t)
	for q, want := range map[string]string{
		"SELECT repeat('x', 1000000000)":          "53200",
		"SELECT length(repeat('xx', 1000000000))": "54000",
		"SELECT lpad('x', 300000000)":             "54000",
	} {
		if _, code, d := query(t, c, q); code != want || d > 5*time.Second {
			t.Fatalf("%s: SQLSTATE %q after %v, want %s at once", q, code, d, want)
		}
	}
	underLimit(t, s)
	// Nothing of the refused values was allocated: the server holds what
	// it held before.
	if cur, _ := s.RSS(t); cur > 100<<20 {
		t.Fatalf("resident memory %d MB after the refused values", cur>>20)
	}
	// A value the server can hold is built and sent.
	if v, _, _ := query(t, c, "SELECT length(repeat('x', 100000000))"); v != "100000000" {
		t.Fatalf("length %q", v)
	}
	underLimit(t, s)
}

// TestStringAggHuge: string_agg of 3,000 values of 1 MB (3 GB) fails with
// 53200 under the limit instead of growing without bound.
func TestStringAggHuge(t *testing.T) {
	s, c := memServer(t)
	if _, code, _ := query(t, c, "SELECT length(string_agg(v, ',')) FROM (SELECT repeat(g::text, 1000000) AS v FROM generate_series(1, 3000) g) x"); code != "53200" {
		t.Fatalf("SQLSTATE %q, want 53200", code)
	}
	underLimit(t, s)
	// Fewer values that fit are aggregated.
	if v, _, _ := query(t, c, "SELECT length(string_agg(repeat('x', 1000000), '')) FROM generate_series(1, 20)"); v != "20000000" {
		t.Fatalf("length %q", v)
	}
	underLimit(t, s)
}

// TestGroupByManyGroups: a GROUP BY of more groups than work_mem holds
// spills to disk and completes with its memory bounded, giving the same
// answer as the query over fewer groups computes.
func TestGroupByManyGroups(t *testing.T) {
	s, c := memServer(t)
	v, code, _ := query(t, c, `SELECT count(*) || ' ' || sum(n) || ' ' || max(l) FROM (
		SELECT g, count(*) AS n, max(length(t)) AS l FROM (SELECT g, 'value ' || g AS t FROM generate_series(1, 3000000) g) x GROUP BY g) y`)
	if code != "" || v != "3000000 3000000 13" {
		t.Fatalf("got %q (%s)", v, code)
	}
	underLimit(t, s)
}

// TestConcurrentRecursive: four recursive queries that would each grow
// past the limit run at once; each fails with 53200 (or completes) and
// the server stays under its limit and answers afterwards.
func TestConcurrentRecursive(t *testing.T) {
	s, c := memServer(t)
	var wg sync.WaitGroup
	codes := make([]string, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			cc, err := pgx.Connect(ctx, s.DSN("postgres", "", "postgres"))
			if err != nil {
				t.Error(err)
				return
			}
			defer cc.Close(context.Background())
			var n int64
			// The working table doubles at each iteration.
			err = cc.QueryRow(ctx, `WITH RECURSIVE r(n, s) AS (SELECT 1, repeat('x', 10000) FROM generate_series(1, 1000)
				UNION ALL SELECT n + 1, s FROM r, (VALUES (1), (2)) v(k) WHERE n < 40) SELECT count(*) FROM r`).Scan(&n)
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				codes[i] = pe.Code
			} else if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != "53200" {
			t.Errorf("query %d: SQLSTATE %q, want 53200", i, code)
		}
	}
	underLimit(t, s)
	if v, _, _ := query(t, c, "SELECT 1"); v != "1" {
		t.Fatalf("after the recursive queries: %q", v)
	}
}

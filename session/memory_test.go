package session

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// TestMemoryLimit: under a server memory limit, memory_limit shows it
// (read-only); a value or a recursive query larger than the budget fails
// with 53200 at once, one past a field's 1 GB with 54000, and the
// session gives back what its operators reserved, after an error too.
func TestMemoryLimit(t *testing.T) {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	eng.SetMemoryLimit(128 << 20)
	s := connect(t, eng, "u")
	mustRun(t, s, "SHOW memory_limit", "columns memory_limit:text; 128MB; SHOW")
	wantCode(t, s, "SET memory_limit = '1GB'", "55P02")

	wantCode(t, s, "SELECT repeat('x', 100000000)", pgerror.OutOfMemory)
	wantCode(t, s, "SELECT length(repeat('ab', 600000000))", pgerror.ProgramLimitExceeded)
	wantCode(t, s, "SELECT lpad('x', 300000000)", pgerror.ProgramLimitExceeded)
	wantCode(t, s, "SELECT length(repeat('x', 40000000) || repeat('y', 40000000))", pgerror.OutOfMemory)
	wantCode(t, s, "SELECT replace(repeat('x', 1000), 'x', repeat('y', 2000000))", pgerror.ProgramLimitExceeded)
	mustRun(t, s, "SELECT length(repeat('x', 1000000) || 'y')", "columns length:integer; 1000001; SELECT 1")
	// A recursive query holds its working table, not its result: 20,000
	// rows of 10 kB (200 MB in all) pass through a 32 MB budget, and the
	// LIMIT of an endless one ends it; a working table that doubles at
	// each iteration fails with 53200.
	mustRun(t, s, `WITH RECURSIVE r(n, s) AS (SELECT 1, repeat('x', 10000) UNION ALL SELECT n + 1, s FROM r WHERE n < 20000)
		SELECT count(*), sum(length(s)) FROM r`, "columns count:bigint,sum:bigint; 20000|200000000; SELECT 1")
	mustRun(t, s, `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r LIMIT 3`, "columns n:integer; 1; 2; 3; SELECT 3")
	wantCode(t, s, `WITH RECURSIVE r(n, s) AS (SELECT 1, repeat('x', 10000) UNION ALL SELECT n + 1, s FROM r, (VALUES (1), (2)) v(k) WHERE n < 40)
		SELECT count(*) FROM r`, pgerror.OutOfMemory)
	wantCode(t, s, `SELECT count(*) FROM (SELECT DISTINCT g, repeat('x', 100) FROM generate_series(1, 1000000) g) d`, pgerror.OutOfMemory)
	if used := s.mem.Used(); used != 0 {
		t.Fatalf("the session holds %d bytes after its statements failed", used)
	}
	mustRun(t, s, "SELECT count(*) FROM (SELECT DISTINCT g % 1000 FROM generate_series(1, 100000) g) d", "columns count:bigint; 1000; SELECT 1")
	s.Close()
	if used := eng.mem.Used(); used != 0 {
		t.Fatalf("the server holds %d bytes after the session ended", used)
	}
}

// TestVersionFunctionsChargeMemory: what a diff, a merge and a reset hold
// of the rows that differ is charged to the session: past the server's
// budget they fail with 53200 and give back what they took; within it
// they run.
func TestVersionFunctionsChargeMemory(t *testing.T) {
	db, err := storage.Open(storage.Options{InMemory: true, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	eng.SetMemoryLimit(32 << 20)
	s := connect(t, eng, "u")
	mustRun(t, s, "CREATE TABLE big (k text PRIMARY KEY)", "")
	mustRun(t, s, "INSERT INTO big SELECT repeat('k', 200) || g FROM generate_series(1, 150000) g", "INSERT 0 150000")
	mustRun(t, s, "SELECT deeplake_tag('big', 'full')", "columns deeplake_tag:text; full; SELECT 1")
	mustRun(t, s, "SELECT deeplake_branch('big', 'b')", "columns deeplake_branch:text; b; SELECT 1")
	mustRun(t, s, "DELETE FROM big", "DELETE 150000")
	for _, q := range []string{
		"SELECT count(*) FROM deeplake_diff('big', 'full', 'main')",
		"SELECT deeplake_merge('big', 'main', 'b')",
	} {
		wantCode(t, s, q, pgerror.OutOfMemory)
		if used := s.mem.Used(); used != 0 {
			t.Fatalf("%s: the session holds %d bytes after it failed", q, used)
		}
	}
	// A reset holds 8 bytes of each row it brings back, not its key or
	// values: 150,000 rows fit.
	mustRun(t, s, "SELECT length(deeplake_reset('big', 'full'))", "columns length:integer; 12; SELECT 1")
	if used := s.mem.Used(); used != 0 {
		t.Fatalf("the session holds %d bytes after the reset", used)
	}
	mustRun(t, s, "SELECT count(*) FROM big", "columns count:bigint; 150000; SELECT 1")
}

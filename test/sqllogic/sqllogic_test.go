package sqllogic_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
	"github.com/deeplaked/deeplaked/test/sqllogic"
)

// filesFlag selects the files to run; SQLLOGIC_FILES does the same. Both take
// comma-separated globs ("**" matches any number of directories), relative to
// this directory.
var filesFlag = flag.String("files", "", "comma-separated globs of .test files (env SQLLOGIC_FILES)")

const defaultFiles = "testdata/**/*.test"

// rewriteFlag writes what the server returned into the expected section
// of each query that fails, in place (sqllogic.Rewrite), on the memory
// backend alone unless SQLLOGIC_BACKENDS says otherwise. It is how a
// golden EXPLAIN output is made or updated; read the diff before
// committing it.
var rewriteFlag = flag.Bool("rewrite", false, "rewrite the expected values of failing queries in place")

// deeplakedOnly marks files that use types or functions PostgreSQL lacks;
// runs against a real PostgreSQL (SQLLOGIC_DSN) skip them.
const deeplakedOnly = "_deeplaked.test"

// TestSQLLogic runs each selected file as a subtest: against a fresh
// in-process deeplaked by default, or against the PostgreSQL server named by
// SQLLOGIC_DSN (one fresh database per file) to check the files themselves.
func TestSQLLogic(t *testing.T) {
	files := selectFiles(t)
	dsn := os.Getenv("SQLLOGIC_DSN")
	if dsn != "" {
		runFiles(t, files, newPostgresTarget(t, dsn), true)
		return
	}
	// Every file runs against each storage backend: memory, a local data
	// directory and S3 (a versitygw server). On disk and on S3 rows are
	// flushed into chunks after every commit, so scans read chunk objects.
	backends := os.Getenv("SQLLOGIC_BACKENDS")
	switch {
	case backends != "":
	case *rewriteFlag:
		backends = "memory"
	default:
		backends = "memory,local,s3"
	}
	for _, b := range strings.Split(backends, ",") {
		b = strings.TrimSpace(b)
		t.Run(b, func(t *testing.T) {
			dt := deeplakedTarget{backend: b}
			switch b {
			case "memory", "local":
			case "s3":
				dt.s3 = s3test.Start(t)
				dt.s3.SetEnv(t)
			default:
				t.Fatalf("unknown backend %q in SQLLOGIC_BACKENDS (memory, local, s3)", b)
			}
			runFiles(t, files, dt, false)
		})
	}
}

func runFiles(t *testing.T, files []string, target target, postgres bool) {
	dsn := ""
	if postgres {
		dsn = "postgres"
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.ToSlash(path), ".test")
		name = strings.TrimPrefix(strings.TrimPrefix(name, "testdata/"), "/")
		t.Run(name, func(t *testing.T) {
			if dsn != "" && strings.HasSuffix(path, deeplakedOnly) {
				t.Skip("deeplaked-only file")
			}
			f, err := sqllogic.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if target.parallel() {
				t.Parallel()
			}
			conn, engines := target.open(t)
			r := sqllogic.Runner{Conn: conn, Engines: engines, RecordTimeout: time.Minute}
			res := r.Run(context.Background(), f)
			fails := res.Failures
			if *rewriteFlag {
				rest, err := sqllogic.Rewrite(path, f, fails)
				if err != nil {
					t.Fatalf("rewriting %s: %v", path, err)
				}
				if n := len(fails) - len(rest); n > 0 {
					t.Logf("%s: rewrote %d expected results", path, n)
				}
				fails = rest
			}
			for _, fail := range fails {
				t.Error(fail.String())
			}
			t.Logf("%s: %d passed, %d failed, %d skipped", path, res.Passed, len(res.Failures), res.Skipped)
		})
	}
}

// brokenFile is a file whose records marked "fails" must each be reported
// at their line, while the others pass.
const brokenFile = `statement ok
CREATE TABLE r (a INT PRIMARY KEY, b TEXT)

statement ok
INSERT INTO r VALUES (1, 'x'), (2, NULL), (3, '')

# fails: the statement succeeds
statement error
SELECT a FROM r

# fails: wrong SQLSTATE
statement error pgcode 42P01
INSERT INTO r VALUES (1, 'dup')

statement error pgcode 23505
INSERT INTO r VALUES (1, 'dup')

query IT rowsort
SELECT a, b FROM r
----
1
x
2
NULL
3
(empty)

# fails: order differs without rowsort
query I
SELECT a FROM r ORDER BY a DESC
----
1
2
3

# fails: wrong column count
query II
SELECT a FROM r WHERE a = 1
----
1

query I valuesort
SELECT a FROM r
----
3 values hashing to c0710d6b4f15dfa88f600b0e6b624077

# fails: wrong hash
query I valuesort
SELECT a + 1 FROM r
----
3 values hashing to c0710d6b4f15dfa88f600b0e6b624077

# fails: statement ok that errors
statement ok
SELECT nope FROM r

skipif postgresql
statement ok
SELECT this is skipped

onlyif postgresql
query T
SELECT b FROM r WHERE a = 1
----
x

halt

statement ok
SELECT this is never run
`

// TestRunnerReportsFailures checks that the runner reports each wrong
// expectation at its line and passes the right ones.
func TestRunnerReportsFailures(t *testing.T) {
	f, err := sqllogic.Parse("broken.test", strings.NewReader(brokenFile))
	if err != nil {
		t.Fatal(err)
	}
	var target target = deeplakedTarget{}
	if dsn := os.Getenv("SQLLOGIC_DSN"); dsn != "" {
		target = newPostgresTarget(t, dsn)
	}
	conn, engines := target.open(t)
	r := sqllogic.Runner{Conn: conn, Engines: engines}
	res := r.Run(context.Background(), f)
	var lines []int
	for _, fail := range res.Failures {
		lines = append(lines, fail.Line)
	}
	if want := []int{8, 12, 29, 37, 48, 54}; !slices.Equal(lines, want) {
		for _, fail := range res.Failures {
			t.Log(fail.String())
		}
		t.Fatalf("failures at lines %v, want %v", lines, want)
	}
	if res.Passed != 6 || res.Skipped != 1 || !res.Halted {
		t.Errorf("passed %d, skipped %d, halted %v; want 6, 1, true", res.Passed, res.Skipped, res.Halted)
	}
	// The values a query returned are what Rewrite would write; a
	// statement's failure has none.
	if got := res.Failures[2].Result; !slices.Equal(got, []string{"3", "2", "1"}) {
		t.Errorf("result of the failure at line 29: %q, want 3 2 1", got)
	}
	if got := res.Failures[1].Result; got != nil {
		t.Errorf("result of the failure at line 12: %q, want none", got)
	}
	if got := res.Failures[1].String(); !strings.Contains(got, "broken.test:12:") ||
		!strings.Contains(got, "SQLSTATE 42P01") || !strings.Contains(got, "ERROR 23505") {
		t.Errorf("failure report lacks file:line or codes:\n%s", got)
	}
}

func selectFiles(t *testing.T) []string {
	t.Helper()
	patterns := *filesFlag
	if patterns == "" {
		patterns = os.Getenv("SQLLOGIC_FILES")
	}
	if patterns == "" {
		patterns = defaultFiles
	}
	var files []string
	for _, p := range strings.Split(patterns, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		m, err := sqllogic.Glob(p)
		if err != nil {
			t.Fatalf("bad glob %q: %v", p, err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no .test files match %q", patterns)
	}
	return files
}

// target is where a file's records run.
type target interface {
	// open returns a connection to a fresh database, closed when t ends, and
	// the engine names skipif/onlyif match.
	open(t *testing.T) (*pgconn.PgConn, []string)
	parallel() bool
}

// deeplakedTarget starts one in-process server per file on a storage
// backend: "memory", "local" (a temporary data directory) or "s3" (a fresh
// bucket on s3).
type deeplakedTarget struct {
	backend string
	s3      *s3test.Server
}

func (deeplakedTarget) parallel() bool { return true }

func (d deeplakedTarget) open(t *testing.T) (*pgconn.PgConn, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	opts := server.Options{
		Listen:  "127.0.0.1:0",
		DataDir: t.TempDir(),
		Logger:  logger,
	}
	switch d.backend {
	case "memory":
		opts.InMemory = true
	case "local":
		opts.FlushRows = 1
	case "s3":
		opts.FlushRows = 1
		opts.Storage = "s3://" + d.s3.NewBucketName() + "/sqllogic"
		opts.S3Endpoint = d.s3.Endpoint
	}
	srv, err := server.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("closing server: %v", err)
		}
	})
	conn := connect(ctx, t, "postgres://sqllogic@"+srv.Addr()+"/sqllogic?sslmode=disable&default_query_exec_mode=simple_protocol")
	return conn, []string{"postgresql", "deeplaked"}
}

// postgresTarget runs files against a real PostgreSQL: each file in a
// database of its own when the role may create databases, otherwise one after
// another in the DSN's database, dropping the tables a file made.
type postgresTarget struct {
	dsn         string
	perDatabase bool
	seq         atomic.Int64
}

func newPostgresTarget(t *testing.T, dsn string) *postgresTarget {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := connect(ctx, t, dsn)
	p := &postgresTarget{dsn: dsn}
	// Probe whether databases can be made.
	name := fmt.Sprintf("sqllogic_probe_%d", os.Getpid())
	if err := admin.Exec(ctx, "CREATE DATABASE "+name).Close(); err == nil {
		p.perDatabase = true
		if err := admin.Exec(ctx, "DROP DATABASE "+name).Close(); err != nil {
			t.Fatalf("dropping %s: %v", name, err)
		}
	} else {
		t.Logf("cannot create databases (%v); running files one after another", err)
	}
	return p
}

func (p *postgresTarget) parallel() bool { return p.perDatabase }

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

func (p *postgresTarget) open(t *testing.T) (*pgconn.PgConn, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	engines := []string{"postgresql"}
	if !p.perDatabase {
		conn := connect(ctx, t, p.dsn)
		dropTables(ctx, t, conn)
		t.Cleanup(func() { dropTables(context.Background(), t, conn) })
		return conn, engines
	}
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	name = fmt.Sprintf("slt_%d_%d_%s", os.Getpid(), p.seq.Add(1), name)
	if len(name) > 63 {
		name = name[:63]
	}
	admin := connect(ctx, t, p.dsn)
	if err := admin.Exec(ctx, "CREATE DATABASE "+name).Close(); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)").Close(); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	// Registered after the DROP, so that it runs before it.
	return connectTo(ctx, t, p.dsn, name), engines
}

// dropTables drops every table and sequence in the current schema.
func dropTables(ctx context.Context, t *testing.T, conn *pgconn.PgConn) {
	t.Helper()
	res, err := conn.Exec(ctx, "ROLLBACK; SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()").ReadAll()
	if err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	for _, row := range res[len(res)-1].Rows {
		if err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+string(row[0])+" CASCADE").Close(); err != nil {
			t.Fatalf("dropping table %s: %v", row[0], err)
		}
	}
}

// connect opens a connection to dsn; it is closed when t ends.
func connect(ctx context.Context, t *testing.T, dsn string) *pgconn.PgConn {
	t.Helper()
	return connectTo(ctx, t, dsn, "")
}

// connectTo opens a connection to dsn, or to its server's database db when db
// is not empty, with pgx set to the simple query protocol. Records run on the
// underlying pgconn.PgConn, which reads every value as the raw text the server
// sent. The connection is closed when t ends.
func connectTo(ctx context.Context, t *testing.T, dsn, db string) *pgconn.PgConn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", dsn, err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	if db != "" {
		cfg.Database = db
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s (database %q): %v", dsn, cfg.Database, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn.PgConn()
}

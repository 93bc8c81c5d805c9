// Command tpchbench loads generated TPC-H files into deeplaked and into
// PostgreSQL, times the loads, then runs the 22 queries on each, warm,
// and prints per query the median of -runs runs and the ratios, as a
// Markdown table. With -duckdb it adds DuckDB's column from the JSON that
// bench/tpch/duckdb/tpch.mjs printed for the same files. bench/tpch/run.sh
// does all of it in one run:
//
//	go run ./bench/tpch/cmd/tpchgen -sf 1 -out /tmp/tpch-sf1
//	node bench/tpch/duckdb/tpch.mjs /tmp/tpch-sf1 bench/tpch/queries >/tmp/duckdb.json
//	go run ./bench/tpch/cmd/tpchbench -dir /tmp/tpch-sf1 \
//	    -deeplaked postgres://postgres@127.0.0.1:5433/tpch \
//	    -postgres postgres://postgres@127.0.0.1:5432/tpch \
//	    -duckdb /tmp/duckdb.json
//
// Both databases must exist and be empty; deeplaked gets VACUUM and
// PostgreSQL ANALYZE after its load, as a user would run them. Queries run
// under statement_timeout = -timeout; one that runs past it is canceled,
// counts as that long and is printed as >Ns (a sum holding one as >Ns
// too). The row counts of the engines are compared: a warning line names
// each query whose counts differ. bench/tpch/README.md has the latest
// figures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/deeplaked/deeplaked/bench/tpch"
)

func main() {
	dir := flag.String("dir", "", "directory of the generated .tbl files")
	dl := flag.String("deeplaked", "", "deeplaked connection string")
	pg := flag.String("postgres", "", "PostgreSQL connection string")
	duck := flag.String("duckdb", "", "DuckDB's results, the JSON of bench/tpch/duckdb/tpch.mjs (optional)")
	runs := flag.Int("runs", 3, "warm runs of each query (the median is kept)")
	timeout := flag.Duration("timeout", 60*time.Second, "longest a query may run")
	machine := flag.String("machine", "", "machine description printed under the table")
	flag.Parse()
	if *dir == "" || *dl == "" || *pg == "" {
		flag.Usage()
		os.Exit(2)
	}
	var ds *engine
	if *duck != "" {
		var err error
		if ds, err = readDuckDB(*duck); err != nil {
			fmt.Fprintln(os.Stderr, "tpchbench:", err)
			os.Exit(1)
		}
	}
	es, err := run(*dir, *dl, *pg, *runs, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpchbench:", err)
		os.Exit(1)
	}
	if ds != nil {
		es = append(es, ds)
	}
	report(os.Stdout, es, *timeout, *runs, *machine)
}

// A result is one query's time on one engine: the median of the warm
// runs, or the timeout when it ran past it.
type result struct {
	d        time.Duration
	timedOut bool
	failed   string // the error, when the query failed
	rows     int64  // rows of the query's SELECT; -1 when unknown
}

type engine struct {
	name    string
	version string
	load    time.Duration
	q       [tpch.NumQueries + 1]result
}

func run(dir, dlDSN, pgDSN string, runs int, timeout time.Duration) ([]*engine, error) {
	ctx := context.Background()
	type target struct {
		*engine
		dsn  string
		conn *pgconn.PgConn
	}
	var ts []*target
	for _, c := range []struct{ name, dsn string }{{"deeplaked", dlDSN}, {"PostgreSQL", pgDSN}} {
		conn, err := connect(ctx, c.dsn, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		t := &target{engine: &engine{name: c.name, version: conn.ParameterStatus("server_version")}, dsn: c.dsn, conn: conn}
		defer func() { t.conn.Close(ctx) }()
		start := time.Now()
		if err := tpch.Load(ctx, conn, dir); err != nil {
			return nil, fmt.Errorf("loading %s: %w", c.name, err)
		}
		after := "VACUUM"
		if c.name == "PostgreSQL" {
			after = "ANALYZE"
		}
		if _, err := conn.Exec(ctx, after).ReadAll(); err != nil {
			return nil, fmt.Errorf("%s on %s: %w", after, c.name, err)
		}
		t.load = time.Since(start)
		fmt.Fprintf(os.Stderr, "%s: loaded in %v\n", c.name, t.load.Round(time.Millisecond))
		// The queries run under statement_timeout from here on.
		t.conn.Close(ctx)
		if t.conn, err = connect(ctx, c.dsn, timeout); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		ts = append(ts, t)
	}
	for q := 1; q <= tpch.NumQueries; q++ {
		text, err := tpch.Query(q)
		if err != nil {
			return nil, err
		}
		stmts := tpch.Statements(text)
		for _, t := range ts {
			r := result{rows: -1}
			var ds []time.Duration
			for i := range runs + 1 { // the first run warms
				// The server's statement_timeout ends a query; the
				// context, a little later, is for a server that does
				// not: it sends a cancel request, then drops the
				// connection.
				qctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
				start := time.Now()
				rows, err := exec(qctx, t.conn, stmts)
				d := time.Since(start)
				cancel()
				if err != nil {
					var pgErr *pgconn.PgError
					if qctx.Err() == nil && !(errors.As(err, &pgErr) && pgErr.Code == "57014") && d < timeout {
						r.failed = err.Error()
						fmt.Fprintf(os.Stderr, "%s: query %d: %v\n", t.name, q, err)
					} else {
						r.timedOut = true
					}
					if t.conn.IsClosed() || qctx.Err() != nil {
						t.conn.Close(ctx)
						if t.conn, err = connect(ctx, t.dsn, timeout); err != nil {
							return nil, fmt.Errorf("%s: %w", t.name, err)
						}
					}
					// A query 15 stopped midway leaves its view behind.
					dropViews(ctx, t.conn, stmts)
					break
				}
				r.rows = rows
				if i > 0 {
					ds = append(ds, d)
				}
			}
			if r.timedOut || r.failed != "" {
				r.d = timeout
			} else {
				slices.Sort(ds)
				r.d = ds[len(ds)/2]
			}
			t.q[q] = r
			fmt.Fprintf(os.Stderr, "%s: query %d: %s, %d rows\n", t.name, q, seconds(r), r.rows)
		}
	}
	var es []*engine
	for _, t := range ts {
		es = append(es, t.engine)
	}
	return es, nil
}

// connect opens a connection whose canceled context sends the server a
// cancel request; with a timeout, its queries run under statement_timeout.
func connect(ctx context.Context, dsn string, timeout time.Duration) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 5 * time.Second}
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		set := fmt.Sprintf("SET statement_timeout = %d", timeout.Milliseconds())
		if _, err := conn.Exec(ctx, set).ReadAll(); err != nil {
			conn.Close(ctx)
			return nil, err
		}
	}
	return conn, nil
}

// exec runs a query file's statements, reading and dropping their rows,
// and returns the number of rows of its SELECT statements.
func exec(ctx context.Context, conn *pgconn.PgConn, stmts []string) (int64, error) {
	rows := int64(-1)
	for _, stmt := range stmts {
		res, err := conn.Exec(ctx, stmt).ReadAll()
		if err != nil {
			return -1, err
		}
		if isSelect(stmt) {
			rows = 0
			for _, r := range res {
				rows += int64(len(r.Rows))
			}
		}
	}
	return rows, nil
}

var (
	selectRE = regexp.MustCompile(`(?i)^select\b`)
	viewRE   = regexp.MustCompile(`(?i)^create\s+view\s+(\w+)`)
)

func isSelect(stmt string) bool { return selectRE.MatchString(stmt) }

// dropViews drops the views the statements create, if they exist.
func dropViews(ctx context.Context, conn *pgconn.PgConn, stmts []string) {
	for _, stmt := range stmts {
		if m := viewRE.FindStringSubmatch(stmt); m != nil {
			conn.Exec(ctx, "DROP VIEW IF EXISTS "+m[1]).ReadAll()
		}
	}
}

// readDuckDB reads the JSON bench/tpch/duckdb/tpch.mjs prints.
func readDuckDB(path string) (*engine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in struct {
		Version     string  `json:"version"`
		LoadSeconds float64 `json:"load_seconds"`
		Timeout     float64 `json:"timeout_seconds"`
		Queries     []struct {
			Query   int      `json:"query"`
			Seconds *float64 `json:"seconds"`
			Rows    *int64   `json:"rows"`
			Timeout bool     `json:"timeout"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e := &engine{name: "DuckDB", version: in.Version, load: secs(in.LoadSeconds)}
	seen := 0
	for _, q := range in.Queries {
		if q.Query < 1 || q.Query > tpch.NumQueries {
			return nil, fmt.Errorf("%s: query %d", path, q.Query)
		}
		r := result{rows: -1, timedOut: q.Timeout || q.Seconds == nil}
		if q.Rows != nil {
			r.rows = *q.Rows
		}
		if r.timedOut {
			r.d = secs(in.Timeout)
		} else {
			r.d = secs(*q.Seconds)
		}
		e.q[q.Query] = r
		seen++
	}
	if seen != tpch.NumQueries {
		return nil, fmt.Errorf("%s: %d queries, want %d", path, seen, tpch.NumQueries)
	}
	return e, nil
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// seconds formats a result in seconds, >Ns when it timed out.
func seconds(r result) string {
	switch {
	case r.failed != "":
		return "error"
	case r.timedOut:
		return ">" + strings.TrimSuffix(strings.TrimRight(fmtSeconds(r.d), "0"), ".") + "s"
	}
	return fmtSeconds(r.d)
}

func fmtSeconds(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	case s >= 1:
		return fmt.Sprintf("%.2f", s)
	case s >= 0.1:
		return fmt.Sprintf("%.3f", s)
	}
	return fmt.Sprintf("%.4f", s)
}

// ratio formats a/b. A time that ran past the timeout is a lower bound,
// so the ratio is one too (>) or an upper bound (<); with both, or a
// failure, nothing is known.
func ratio(a, b result) string {
	if a.failed != "" || b.failed != "" || a.timedOut && b.timedOut || b.d <= 0 {
		return "—"
	}
	x := float64(a.d) / float64(b.d)
	var s string
	switch {
	case x >= 100:
		s = fmt.Sprintf("%.0f×", x)
	case x >= 10:
		s = fmt.Sprintf("%.1f×", x)
	default:
		s = fmt.Sprintf("%.2f×", x)
	}
	switch {
	case a.timedOut:
		return ">" + s
	case b.timedOut:
		return "<" + s
	}
	return s
}

// sum adds the 22 results; it is a lower bound when one timed out.
func sum(e *engine) result {
	var s result
	for _, r := range e.q[1:] {
		if r.failed != "" {
			s.failed = r.failed
		}
		s.timedOut = s.timedOut || r.timedOut
		s.d += r.d
	}
	return s
}

// report prints the Markdown table, the targets and the warnings. es is
// deeplaked, PostgreSQL and, optionally, DuckDB.
func report(w io.Writer, es []*engine, timeout time.Duration, runs int, machine string) {
	dl, pg := es[0], es[1]
	var duck *engine
	if len(es) > 2 {
		duck = es[2]
	}
	fmt.Fprintf(w, "\nMedian of %d warm runs (after one untimed run), seconds; timeout %gs.\n\n", runs, timeout.Seconds())
	head := "| query | deeplaked s | PostgreSQL s |"
	rule := "| ---: | ---: | ---: |"
	if duck != nil {
		head += " DuckDB s |"
		rule += " ---: |"
	}
	head += " speedup vs PG (PG/deeplaked) |"
	rule += " ---: |"
	if duck != nil {
		head += " deeplaked/DuckDB |"
		rule += " ---: |"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	row := func(name string, rs ...result) {
		line := "| " + name + " | " + seconds(rs[0]) + " | " + seconds(rs[1]) + " |"
		if duck != nil {
			line += " " + seconds(rs[2]) + " |"
		}
		line += " " + ratio(rs[1], rs[0]) + " |"
		if duck != nil {
			line += " " + ratio(rs[0], rs[2]) + " |"
		}
		fmt.Fprintln(w, line)
	}
	pick := func(q int) []result {
		rs := []result{dl.q[q], pg.q[q]}
		if duck != nil {
			rs = append(rs, duck.q[q])
		}
		return rs
	}
	for q := 1; q <= tpch.NumQueries; q++ {
		row(fmt.Sprint(q), pick(q)...)
	}
	sums := []result{sum(dl), sum(pg)}
	loads := []result{{d: dl.load}, {d: pg.load}}
	if duck != nil {
		sums = append(sums, sum(duck))
		loads = append(loads, result{d: duck.load})
	}
	row("sum", sums...)
	row("load", loads...)

	fmt.Fprintln(w)
	fast := 0
	for q := 1; q <= tpch.NumQueries; q++ {
		if r := dl.q[q]; r.failed == "" && !r.timedOut && (pg.q[q].timedOut || float64(pg.q[q].d) >= 3*float64(r.d)) {
			fast++
		}
	}
	fmt.Fprintf(w, "Targets: every query ≥3× faster than PostgreSQL: %d of %d are", fast, tpch.NumQueries)
	if duck != nil {
		fmt.Fprintf(w, "; sum within 3× of DuckDB: deeplaked/DuckDB %s", ratio(sums[0], sums[2]))
	}
	fmt.Fprintf(w, "; load ≥2× faster than PostgreSQL's COPY: %s.\n", ratio(loads[1], loads[0]))
	// deeplaked's server_version is the PostgreSQL version it speaks.
	var vs []string
	for _, e := range es[1:] {
		if e.version != "" {
			vs = append(vs, e.name+" "+e.version)
		}
	}
	fmt.Fprintf(w, "Versions: %s.\n", strings.Join(vs, ", "))
	if machine != "" {
		fmt.Fprintf(w, "Machine: %s.\n", machine)
	}

	// The row counts must agree between the engines that answered.
	var unanswered, warnings []string
	for q := 1; q <= tpch.NumQueries; q++ {
		var parts, missing []string
		var counts []int64
		for _, e := range es {
			if r := e.q[q]; r.rows >= 0 {
				parts = append(parts, fmt.Sprintf("%s %d", e.name, r.rows))
				counts = append(counts, r.rows)
			} else {
				parts = append(parts, e.name+" no answer")
				missing = append(missing, e.name)
			}
		}
		if len(missing) > 0 {
			unanswered = append(unanswered, fmt.Sprintf("%d (%s)", q, strings.Join(missing, ", ")))
		}
		if len(counts) > 0 && slices.Min(counts) != slices.Max(counts) {
			warnings = append(warnings, fmt.Sprintf("warning: query %d returns different row counts: %s", q, strings.Join(parts, ", ")))
		}
	}
	check := "Row counts: the engines that answered agree on every query"
	if len(warnings) > 0 {
		check = fmt.Sprintf("Row counts: the engines differ on %d of the %d queries", len(warnings), tpch.NumQueries)
	}
	if len(unanswered) > 0 {
		check += "; no answer within the timeout: " + strings.Join(unanswered, "; ")
	}
	fmt.Fprintln(w, check+".")
	for _, l := range warnings {
		fmt.Fprintln(w, l)
	}
	for _, e := range es {
		for q := 1; q <= tpch.NumQueries; q++ {
			if r := e.q[q]; r.failed != "" {
				fmt.Fprintf(w, "warning: query %d failed on %s: %s\n", q, e.name, r.failed)
			}
		}
	}
}

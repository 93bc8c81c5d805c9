// Command tpchbench loads generated TPC-H files into deeplaked and into
// PostgreSQL, times the loads, then runs the 22 queries on each, warm,
// and prints per query the median of -runs runs and the ratio:
//
//	go run ./bench/tpch/cmd/tpchgen -sf 1 -out /tmp/tpch-sf1
//	go run ./bench/tpch/cmd/tpchbench -dir /tmp/tpch-sf1 \
//	    -deeplaked postgres://postgres@127.0.0.1:5433/tpch \
//	    -postgres postgres://postgres@127.0.0.1:5432/tpch
//
// Both databases must exist and be empty; PostgreSQL gets ANALYZE after
// its load, as a user would run it. A query past -timeout counts as that
// long. bench/tpch/README.md has the latest figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/bench/tpch"
)

func main() {
	dir := flag.String("dir", "", "directory of the generated .tbl files")
	dl := flag.String("deeplaked", "", "deeplaked connection string")
	pg := flag.String("postgres", "", "PostgreSQL connection string")
	runs := flag.Int("runs", 3, "warm runs of each query (the median is kept)")
	timeout := flag.Duration("timeout", 60*time.Second, "longest a query may run")
	flag.Parse()
	if *dir == "" || *dl == "" || *pg == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dir, *dl, *pg, *runs, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "tpchbench:", err)
		os.Exit(1)
	}
}

func run(dir, dlDSN, pgDSN string, runs int, timeout time.Duration) error {
	ctx := context.Background()
	type target struct {
		name string
		dsn  string
		conn *pgconn.PgConn
		load time.Duration
		q    [tpch.NumQueries + 1]time.Duration
	}
	var ts []*target
	for _, c := range []struct{ name, dsn string }{{"deeplaked", dlDSN}, {"postgres", pgDSN}} {
		conn, err := pgconn.Connect(ctx, c.dsn)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		t := &target{name: c.name, dsn: c.dsn, conn: conn}
		defer func() { t.conn.Close(ctx) }()
		start := time.Now()
		if err := tpch.Load(ctx, conn, dir); err != nil {
			return fmt.Errorf("loading %s: %w", c.name, err)
		}
		after := "VACUUM"
		if c.name == "postgres" {
			after = "ANALYZE"
		}
		if _, err := conn.Exec(ctx, after).ReadAll(); err != nil {
			return fmt.Errorf("%s on %s: %w", after, c.name, err)
		}
		t.load = time.Since(start)
		fmt.Printf("%s: loaded in %v\n", c.name, t.load.Round(time.Millisecond))
		ts = append(ts, t)
	}
	fmt.Printf("%5s %14s %14s %10s\n", "query", "deeplaked", "postgres", "pg/dl")
	var sums [2]time.Duration
	for q := 1; q <= tpch.NumQueries; q++ {
		text, err := tpch.Query(q)
		if err != nil {
			return err
		}
		for i, t := range ts {
			var ds []time.Duration
			for range runs + 1 { // the first run warms
				qctx, cancel := context.WithTimeout(ctx, timeout)
				start := time.Now()
				err := exec(qctx, t.conn, text)
				d := time.Since(start)
				cancel()
				if err != nil {
					if qctx.Err() == nil {
						return fmt.Errorf("query %d on %s: %w", q, t.name, err)
					}
					// A canceled query closes its connection.
					d = timeout
					t.conn.Close(ctx)
					if t.conn, err = pgconn.Connect(ctx, t.dsn); err != nil {
						return err
					}
				}
				ds = append(ds, d)
				if d >= timeout {
					break
				}
			}
			if len(ds) > 1 {
				ds = ds[1:]
			}
			slices.Sort(ds)
			t.q[q] = ds[len(ds)/2]
			sums[i] += t.q[q]
		}
		fmt.Printf("%5d %14s %14s %9.2fx\n", q, ts[0].q[q].Round(time.Microsecond), ts[1].q[q].Round(time.Microsecond),
			float64(ts[1].q[q])/float64(ts[0].q[q]))
	}
	fmt.Printf("%5s %14s %14s %9.2fx\n", "sum", sums[0].Round(time.Millisecond), sums[1].Round(time.Millisecond), float64(sums[1])/float64(sums[0]))
	fmt.Printf("%5s %14s %14s %9.2fx\n", "load", ts[0].load.Round(time.Millisecond), ts[1].load.Round(time.Millisecond), float64(ts[1].load)/float64(ts[0].load))
	return nil
}

// exec runs a query file's statements, reading and dropping their rows.
func exec(ctx context.Context, conn *pgconn.PgConn, text string) error {
	for _, stmt := range tpch.Statements(text) {
		if _, err := conn.Exec(ctx, stmt).ReadAll(); err != nil {
			return err
		}
	}
	return nil
}

// Package spine benchmarks the end-to-end path of the first release: bulk
// INSERT over the wire, a full scan and a filtered count.
//
// Run:
//
//	go test ./bench/spine -run '^$' -bench . -benchtime 1x
//
// With BENCH_PG_DSN set (e.g. postgres://postgres@127.0.0.1:5432/postgres)
// the same workload also runs against PostgreSQL in the same run and the
// benchmark reports the ratio as pg_ratio (deeplaked time / PostgreSQL time).
package spine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/server"
)

const (
	totalRows = 100_000
	perInsert = 1_000
)

// workload inserts totalRows rows in multi-row INSERTs, then scans them all
// and runs a filtered count; it returns the elapsed time of each phase.
func workload(b *testing.B, conn *pgx.Conn, table string) (insert, scan, count time.Duration) {
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (id bigint PRIMARY KEY, label int, score float8, name text)"); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	start := time.Now()
	for base := 0; base < totalRows; base += perInsert {
		sb.Reset()
		sb.WriteString("INSERT INTO " + table + " VALUES ")
		for i := base; i < base+perInsert; i++ {
			if i > base {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d,%d,%g,'name %d')", i, i%10, float64(i)/7, i)
		}
		if _, err := conn.Exec(ctx, sb.String()); err != nil {
			b.Fatal(err)
		}
	}
	insert = time.Since(start)

	start = time.Now()
	rows, err := conn.Query(ctx, "SELECT id, label, score, name FROM "+table)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != totalRows {
		b.Fatalf("scan returned %d rows: %v", n, rows.Err())
	}
	scan = time.Since(start)

	start = time.Now()
	var c int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE label = 3 AND score > 100").Scan(&c); err != nil {
		b.Fatal(err)
	}
	count = time.Since(start)
	if c == 0 {
		b.Fatal("filtered count found nothing")
	}
	return insert, scan, count
}

func BenchmarkInsertScanCount(b *testing.B) {
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	conn, err := pgx.Connect(context.Background(), "postgres://bench@"+srv.Addr()+"/bench?default_query_exec_mode=simple_protocol")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())

	var pg *pgx.Conn
	if dsn := os.Getenv("BENCH_PG_DSN"); dsn != "" {
		if pg, err = pgx.Connect(context.Background(), dsn); err != nil {
			b.Fatal(err)
		}
		defer pg.Close(context.Background())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ins, scan, cnt := workload(b, conn, "bench_rows")
		b.ReportMetric(ins.Seconds(), "insert_s")
		b.ReportMetric(scan.Seconds(), "scan_s")
		b.ReportMetric(cnt.Seconds(), "count_s")
		if pg != nil {
			pins, pscan, pcnt := workload(b, pg, "deeplaked_bench_rows")
			b.ReportMetric(ins.Seconds()/pins.Seconds(), "insert_pg_ratio")
			b.ReportMetric(scan.Seconds()/pscan.Seconds(), "scan_pg_ratio")
			b.ReportMetric(cnt.Seconds()/pcnt.Seconds(), "count_pg_ratio")
		}
	}
}

// Command versioning measures version control on tables of growing size,
// through SQL on a server in this process (a local data directory):
//
//  1. the latency of deeplake_commit and deeplake_branch (median of
//     several), at each table size: the target is a latency independent
//     of the table's size;
//
//  2. the object bytes a branch adds;
//
//  3. on the largest table, deeplake_diff of two versions that differ in
//     1% of the rows against the same difference by a full scan of both
//     (EXCEPT, both ways), and their ratio (target ≥ 10×).
//
//     go run ./bench/versioning                          # 10k, 100k, 1M rows
//     go run ./bench/versioning -rows 10000,100000       # quick
//
// bench/versioning/README.md has the latest figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/server"
)

func main() {
	sizes := flag.String("rows", "10000,100000,1000000", "table sizes in rows (about 90 bytes a row)")
	reps := flag.Int("reps", 15, "commits and branches timed at each size")
	base := flag.String("dir", "", "where the data directory goes (default $TMPDIR)")
	flag.Parse()
	if err := run(*sizes, *reps, *base); err != nil {
		fmt.Fprintln(os.Stderr, "versioning:", err)
		os.Exit(1)
	}
}

func run(sizeList string, reps int, base string) error {
	var sizes []int
	for _, f := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			return fmt.Errorf("bad -rows %q", f)
		}
		sizes = append(sizes, n)
	}
	dir, err := os.MkdirTemp(base, "bench-versioning-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Options{Listen: "127.0.0.1:0", DataDir: dir,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer srv.Close()
	conn, err := pgx.Connect(ctx, "postgres://bench@"+srv.Addr()+"/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	exec := func(q string) error {
		_, err := conn.Exec(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	fmt.Printf("%10s %12s %12s %16s\n", "rows", "commit", "branch", "object bytes/branch")
	var first [2]time.Duration
	var last [2]time.Duration
	for i, n := range sizes {
		t := fmt.Sprintf("v%d", n)
		if err := exec(fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, label int, emb float32[16])", t)); err != nil {
			return err
		}
		for lo := 0; lo < n; lo += 100_000 {
			hi := min(n, lo+100_000) - 1
			q := fmt.Sprintf("INSERT INTO %s SELECT g, g %% 10, ARRAY[%s]::float32[16] FROM generate_series(%d, %d) g",
				t, strings.Repeat("g, ", 15)+"g", lo, hi)
			if err := exec(q); err != nil {
				return err
			}
		}
		if err := exec("VACUUM " + t); err != nil {
			return err
		}
		var commits, branches []time.Duration
		for r := range reps {
			// A write between commits, so each names a new version.
			if err := exec(fmt.Sprintf("UPDATE %s SET label = label + 1 WHERE id = %d", t, r)); err != nil {
				return err
			}
			start := time.Now()
			if err := exec(fmt.Sprintf("SELECT deeplake_commit('%s', 'c%d')", t, r)); err != nil {
				return err
			}
			commits = append(commits, time.Since(start))
		}
		objs0, err := objectBytes(dir)
		if err != nil {
			return err
		}
		for r := range reps {
			start := time.Now()
			if err := exec(fmt.Sprintf("SELECT deeplake_branch('%s', 'b%d')", t, r)); err != nil {
				return err
			}
			branches = append(branches, time.Since(start))
		}
		objs1, err := objectBytes(dir)
		if err != nil {
			return err
		}
		c, b := median(commits), median(branches)
		if i == 0 {
			first = [2]time.Duration{c, b}
		}
		last = [2]time.Duration{c, b}
		fmt.Printf("%10d %12s %12s %16d\n", n, c.Round(time.Microsecond), b.Round(time.Microsecond), (objs1-objs0)/int64(reps))
	}
	fmt.Printf("latency at %d rows / at %d rows: commit %.2f×, branch %.2f×\n", sizes[len(sizes)-1], sizes[0],
		float64(last[0])/float64(first[0]), float64(last[1])/float64(first[1]))

	// Diff of versions 1% apart against a full scan of both.
	n := sizes[len(sizes)-1]
	t := fmt.Sprintf("v%d", n)
	if err := exec(fmt.Sprintf("SELECT deeplake_tag('%s', 'before')", t)); err != nil {
		return err
	}
	if err := exec(fmt.Sprintf("UPDATE %s SET label = -1 WHERE id %% 100 = 7", t)); err != nil {
		return err
	}
	if err := exec("VACUUM " + t); err != nil {
		return err
	}
	count := func(q string) (int64, time.Duration, error) {
		var ds []time.Duration
		var got int64
		for range 3 {
			start := time.Now()
			if err := conn.QueryRow(ctx, q).Scan(&got); err != nil {
				return 0, 0, fmt.Errorf("%s: %w", q, err)
			}
			ds = append(ds, time.Since(start))
		}
		return got, median(ds), nil
	}
	dn, dt, err := count(fmt.Sprintf("SELECT count(*) FROM deeplake_diff('%s', 'before', 'main')", t))
	if err != nil {
		return err
	}
	en, et, err := count(fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT * FROM "%[1]s@main" EXCEPT SELECT * FROM "%[1]s@before") a) + (SELECT count(*) FROM (SELECT * FROM "%[1]s@before" EXCEPT SELECT * FROM "%[1]s@main") b)`, t))
	if err != nil {
		return err
	}
	fmt.Printf("diff of %d rows, 1%% changed: deeplake_diff %s (%d rows), EXCEPT both ways %s (%d rows): %.1f× faster\n",
		n, dt.Round(time.Microsecond), dn, et.Round(time.Microsecond), en, float64(et)/float64(dt))
	if dn*2 != en {
		return fmt.Errorf("deeplake_diff found %d updated rows, EXCEPT %d rows (want twice as many)", dn, en)
	}
	return nil
}

// objectBytes returns the bytes of the data directory's objects. (A
// branch's catalog record is one key of about 150 bytes:
// storage.TestBranchesCopyNothing.)
func objectBytes(dir string) (n int64, err error) {
	err = filepath.Walk(filepath.Join(dir, "objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// contendResult is one measurement of servers committing to one location
// at once.
type contendResult struct {
	servers   int
	elapsed   time.Duration
	ok        int
	perServer []int
	lat       []time.Duration
	failed    map[string]int // by SQLSTATE
	entries   int            // log entries the load added
	idleGETs  float64        // GETs per second before the load
	reqs      map[reqKind]int
}

// contend measures, for each count of -servers, that many servers with
// --durability bucket on one prefix (the first creates the catalog, the
// others attach to it), each with -conns connections committing one-row
// INSERTs into one table for -seconds. Every request to S3 goes through
// a proxy that counts them (and holds each -s3-latency).
func contend(ctx context.Context, work, s3Dir, endpoint string) error {
	var ns []int
	for _, f := range strings.Split(*servers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-servers %q: want numbers of 1 or more", *servers)
		}
		ns = append(ns, n)
	}
	px, err := startProxy(endpoint, *s3Latency)
	if err != nil {
		return err
	}
	var results []*contendResult
	for i, n := range ns {
		r, err := contendOnce(ctx, work, s3Dir, px, i, n)
		if err != nil {
			return fmt.Errorf("%d servers: %w", n, err)
		}
		results = append(results, r)
	}
	reportContend(results)
	return nil
}

func contendOnce(ctx context.Context, work, s3Dir string, px *proxy, run, n int) (*contendResult, error) {
	prefix := fmt.Sprintf("shared%d", run)
	var ts []*target
	defer func() {
		for _, t := range ts {
			stop(t.proc)
		}
	}()
	for j := range n {
		t := &target{name: fmt.Sprintf("run%d-server%d", run, j), prefix: prefix, durability: "bucket"}
		var extra []string
		if j > 0 {
			extra = []string{"--attach"}
		}
		if err := startDeeplaked(work, px.endpoint, t, extra...); err != nil {
			return nil, err
		}
		ts = append(ts, t)
		if j == 0 {
			if err := exec1(ctx, t.dsn, "CREATE TABLE hot (id bigint, server int, v text)"); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range ts {
		if err := waitCount(ctx, t.dsn, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	r := &contendResult{servers: n, failed: map[string]int{}, perServer: make([]int, n)}

	// Idle: each server only refreshes.
	px.take()
	const idle = 3 * time.Second
	time.Sleep(idle)
	for k, c := range px.take() {
		if k.method == http.MethodGet {
			r.idleGETs += float64(c) / idle.Seconds()
		}
	}

	// Load.
	type worker struct {
		server int
		conn   *pgx.Conn
		lat    []time.Duration
		ok     int
		failed map[string]int
	}
	var ws []*worker
	for j, t := range ts {
		for range *conns {
			c, err := pgx.Connect(ctx, t.dsn)
			if err != nil {
				return nil, err
			}
			defer c.Close(ctx)
			ws = append(ws, &worker{server: j, conn: c, failed: map[string]int{}})
		}
	}
	entries0, _ := logEntries(s3Dir, prefix)
	px.take()
	start := time.Now()
	deadline := start.Add(*seconds)
	var wg sync.WaitGroup
	for wi, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; time.Now().Before(deadline); k++ {
				t0 := time.Now()
				_, err := w.conn.Exec(ctx, "INSERT INTO hot VALUES ($1, $2, $3)", int64(wi)<<32|int64(k), int32(w.server), "x")
				if err != nil {
					var pe *pgconn.PgError
					if !errors.As(err, &pe) {
						w.failed["connection: "+err.Error()]++
						return
					}
					w.failed[pe.Code]++
					continue
				}
				w.lat = append(w.lat, time.Since(t0))
				w.ok++
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.reqs = px.take()
	entries1, _ := logEntries(s3Dir, prefix)
	r.entries = entries1 - entries0
	for _, w := range ws {
		r.ok += w.ok
		r.perServer[w.server] += w.ok
		r.lat = append(r.lat, w.lat...)
		for k, c := range w.failed {
			r.failed[k] += c
		}
	}
	fmt.Fprintf(os.Stderr, "%d servers: %d commits in %.1f s (%.0f/s), failed %v\n", n, r.ok, r.elapsed.Seconds(), float64(r.ok)/r.elapsed.Seconds(), r.failed)
	// Every server serves every acknowledged row, once its refresh ran.
	for _, t := range ts {
		if err := waitCount(ctx, t.dsn, r.ok); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return r, nil
}

func exec1(ctx context.Context, dsn, sql string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

// waitCount waits until table hot has want rows on the server of dsn.
func waitCount(ctx context.Context, dsn string, want int) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var got int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		err = c.QueryRow(ctx, "SELECT count(*) FROM hot").Scan(&got)
		if err == nil && got == int64(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hot has %d rows (%v), want %d", got, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func reportContend(rs []*contendResult) {
	fmt.Printf("# Servers committing to one location at once\n\n")
	fmt.Printf("%s, %d CPUs, %s; S3: versitygw on 127.0.0.1", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), *machine)
	if *s3Latency > 0 {
		fmt.Printf(", each request held %v first", *s3Latency)
	}
	fmt.Printf("; %d connection(s) per server, each committing one-row INSERTs for %v; --durability bucket.\n\n", *conns, *seconds)
	fmt.Println("| servers | commits/s, all servers | ÷ the first row | per server, least–most | p50 | p99 | failed | PUTs per commit | of them refused (412) | GETs per commit | GET/s at idle |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	base := 0.0
	for i, r := range rs {
		s := r.elapsed.Seconds()
		rate := float64(r.ok) / s
		if i == 0 {
			base = rate
		}
		lo, hi := slices.Min(r.perServer), slices.Max(r.perServer)
		var puts, refused, gets int
		for k, c := range r.reqs {
			switch k.method {
			case http.MethodPut:
				puts += c
				if k.status == http.StatusPreconditionFailed {
					refused += c
				}
			case http.MethodGet:
				gets += c
			}
		}
		var failed []string
		for k, c := range r.failed {
			failed = append(failed, fmt.Sprintf("%d × %s", c, k))
		}
		slices.Sort(failed)
		f := "none"
		if len(failed) > 0 {
			f = strings.Join(failed, ", ")
		}
		p50, p99 := "–", "–"
		if len(r.lat) > 0 {
			p50, p99 = ms(percentile(r.lat, 50)), ms(percentile(r.lat, 99))
		}
		per := float64(max(r.ok, 1))
		fmt.Printf("| %d | %.0f | %.2f× | %.0f–%.0f | %s | %s | %s | %.2f | %.2f | %.2f | %.1f |\n",
			r.servers, rate, rate/base, float64(lo)/s, float64(hi)/s, p50, p99, f,
			float64(puts)/per, float64(refused)/per, float64(gets)/per, r.idleGETs)
	}
	fmt.Println()
	for _, r := range rs {
		var longest time.Duration
		if len(r.lat) > 0 {
			longest = slices.Max(r.lat)
		}
		fmt.Printf("%d servers: %d commits (per server %v), %d log entries added; the longest INSERT %.1f s.\n",
			r.servers, r.ok, r.perServer, r.entries, longest.Seconds())
	}
}

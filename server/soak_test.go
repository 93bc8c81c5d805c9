package server_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/server"
)

// Sizes of TestSoakManyConnections.
const (
	soakConns = 200
	// soakDuration is how long the workload runs; -short runs soakShort.
	soakDuration = 30 * time.Second
	soakShort    = 5 * time.Second
	// soakGoroutineSlack is how many goroutines above the baseline count as
	// back to it: storage may have a flush or compaction under way.
	soakGoroutineSlack = 10
	// soakHeapSlack is how far above the baseline the live heap may stay
	// once every client has gone: far less than what 200 sessions, their
	// buffers and their batches hold while they run.
	soakHeapSlack = 8 << 20
)

// TestSoakManyConnections runs soakConns connections at once, each a mixed
// workload of INSERT, SELECT, UPDATE, DELETE, COPY FROM and COPY TO, in
// implicit and explicit transactions, for soakDuration. Half the
// connections use the extended protocol (pgx's default: prepared and cached
// statements, parameters, binary COPY), half the simple protocol. Every
// statement must succeed and every connection must read back exactly the
// rows it wrote; once the clients disconnect, the server's goroutines and
// live heap must return to where they were before.
func TestSoakManyConnections(t *testing.T) {
	duration := soakDuration
	if testing.Short() {
		duration = soakShort
	}
	srv := startWith(t, server.Options{MaxConnections: soakConns + 10})
	cs := connString(t, srv, "soak", "", "")

	setup, err := dial(t, cs)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, setup, `CREATE TABLE soak (conn int, n int, v bigint, note text, e vector(3))`)
	mustExec(t, setup, `INSERT INTO soak VALUES (-1, 0, 0, 'warm-up', '[1,2,3]')`)
	queryText(t, setup, `SELECT count(*) FROM soak`)
	if err := setup.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	baseGoroutines := waitGoroutines(t, 1<<30, 0)
	baseHeap := liveHeap()

	cfg, err := pgx.ParseConfig(cs)
	if err != nil {
		t.Fatal(err)
	}
	simple := cfg.Copy()
	simple.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	conns := make([]*pgx.Conn, soakConns)
	{
		var wg sync.WaitGroup
		errs := make(chan error, soakConns)
		for i := range conns {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cc := cfg
				if i%2 == 1 {
					cc = simple
				}
				c, err := pgx.ConnectConfig(ctx, cc)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				conns[i] = c
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			for _, c := range conns {
				if c != nil {
					c.Close(context.Background())
				}
			}
			t.FailNow()
		}
	}

	var (
		wg         sync.WaitGroup
		statements atomic.Int64
		errCount   atomic.Int64
		errMu      sync.Mutex
		firstErrs  []string
	)
	stop := time.Now().Add(duration)
	for i, c := range conns {
		wg.Go(func() {
			w := soakWorker{id: i, conn: c, simple: i%2 == 1}
			for time.Now().Before(stop) {
				if err := w.step(); err != nil {
					errCount.Add(1)
					errMu.Lock()
					if len(firstErrs) < 10 {
						firstErrs = append(firstErrs, fmt.Sprintf("connection %d, step %d: %v", i, w.steps, err))
					}
					errMu.Unlock()
					return
				}
			}
			statements.Add(w.statements)
		})
	}
	wg.Wait()
	if n := errCount.Load(); n > 0 {
		t.Errorf("%d connections failed:\n%s", n, strings.Join(firstErrs, "\n"))
	}
	t.Logf("%d connections ran %d statements in %s", soakConns, statements.Load(), duration)
	for _, c := range conns {
		_ = c.Close(context.Background())
	}

	got := waitGoroutines(t, baseGoroutines+soakGoroutineSlack, 15*time.Second)
	if got > baseGoroutines+soakGoroutineSlack {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after the clients left, %d before\n%s", got, baseGoroutines, buf)
	}
	heap := liveHeap()
	t.Logf("live heap: %d KiB before, %d KiB after", baseHeap>>10, heap>>10)
	if heap > baseHeap+soakHeapSlack {
		t.Errorf("live heap %d KiB after the clients left, %d KiB before", heap>>10, baseHeap>>10)
	}
}

// soakWorker is one connection's workload. It keeps the rows it owns
// (conn = id) in want, n → v, and checks them against the table.
type soakWorker struct {
	id         int
	conn       *pgx.Conn
	simple     bool // simple protocol; else extended
	steps      int
	statements int64
	next       int
	want       map[int]int64
	copyBuf    bytes.Buffer
}

// step runs one round of the workload.
func (w *soakWorker) step() error {
	if w.want == nil {
		w.want = make(map[int]int64)
	}
	w.steps++
	ctx := context.Background()
	exec := func(q string, args ...any) error {
		w.statements++
		_, err := w.conn.Exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	switch w.steps % 6 {
	case 1: // INSERT, three rows
		var sb strings.Builder
		sb.WriteString("INSERT INTO soak VALUES ")
		for k := range 3 {
			if k > 0 {
				sb.WriteString(", ")
			}
			n := w.next
			w.next++
			w.want[n] = int64(n)
			fmt.Fprintf(&sb, "(%d, %d, %d, 'row %d of %d', '[%d,0,1]')", w.id, n, n, n, w.id, n)
		}
		return exec(sb.String())
	case 2: // UPDATE in an explicit transaction
		if err := exec("BEGIN"); err != nil {
			return err
		}
		if err := exec("UPDATE soak SET v = v + $1 WHERE conn = $2", 10, w.id); err != nil {
			return err
		}
		if err := exec("COMMIT"); err != nil {
			return err
		}
		for n := range w.want {
			w.want[n] += 10
		}
		return nil
	case 3: // COPY FROM STDIN, five rows
		if !w.simple {
			// pgx's CopyFrom: the binary format, after describing the table.
			rows := make([][]any, 5)
			for k := range rows {
				n := w.next
				w.next++
				w.want[n] = int64(-n)
				rows[k] = []any{int32(w.id), int32(n), int64(-n), fmt.Sprintf("copied %d", n), nil}
			}
			w.statements++
			count, err := w.conn.CopyFrom(ctx, pgx.Identifier{"soak"}, []string{"conn", "n", "v", "note", "e"}, pgx.CopyFromRows(rows))
			if err != nil || count != 5 {
				return fmt.Errorf("CopyFrom: %d rows, %w", count, err)
			}
			return nil
		}
		w.copyBuf.Reset()
		for range 5 {
			n := w.next
			w.next++
			w.want[n] = int64(-n)
			fmt.Fprintf(&w.copyBuf, "%d\t%d\t%d\tcopied\\t%d\t[0,0,%d]\n", w.id, n, -n, n, n)
		}
		w.statements++
		tag, err := w.conn.PgConn().CopyFrom(ctx, &w.copyBuf, "COPY soak FROM STDIN")
		if err != nil {
			return fmt.Errorf("COPY FROM: %w", err)
		}
		if tag.RowsAffected() != 5 {
			return fmt.Errorf("COPY FROM: tag %q", tag)
		}
		return nil
	case 4: // SELECT: the rows this connection owns, exactly
		return w.check()
	case 5: // COPY TO STDOUT of the same rows
		var out bytes.Buffer
		w.statements++
		tag, err := w.conn.PgConn().CopyTo(ctx, &out, fmt.Sprintf("COPY (SELECT n, v FROM soak WHERE conn = %d ORDER BY n) TO STDOUT", w.id))
		if err != nil {
			return fmt.Errorf("COPY TO: %w", err)
		}
		if int(tag.RowsAffected()) != len(w.want) || strings.Count(out.String(), "\n") != len(w.want) {
			return fmt.Errorf("COPY TO: tag %q, %d lines, want %d rows", tag, strings.Count(out.String(), "\n"), len(w.want))
		}
		return nil
	default: // DELETE most rows, keeping the table small
		if len(w.want) < 12 {
			return nil
		}
		keep := w.next - 2
		if err := exec("DELETE FROM soak WHERE conn = $1 AND n < $2", w.id, keep); err != nil {
			return err
		}
		for n := range w.want {
			if n < keep {
				delete(w.want, n)
			}
		}
		return nil
	}
}

// check reads the connection's rows and compares them with want.
func (w *soakWorker) check() error {
	w.statements++
	q := "SELECT n, v FROM soak WHERE conn = $1 ORDER BY n"
	rows, err := w.conn.Query(context.Background(), q, w.id)
	if err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	got := make(map[int]int64, len(w.want))
	for rows.Next() {
		var n int32
		var v int64
		if err := rows.Scan(&n, &v); err != nil {
			rows.Close()
			return err
		}
		got[int(n)] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	if len(got) != len(w.want) {
		return fmt.Errorf("%s: %d rows, want %d", q, len(got), len(w.want))
	}
	for n, v := range w.want {
		if g, ok := got[n]; !ok || g != v {
			return fmt.Errorf("%s: row n=%d: v=%d (present %v), want %d", q, n, g, ok, v)
		}
	}
	return nil
}

// waitGoroutines polls runtime.NumGoroutine until it is at most max or
// timeout passes, and returns the last count.
func waitGoroutines(t *testing.T, max int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= max || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

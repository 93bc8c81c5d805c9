package server_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
	"github.com/deeplaked/deeplaked/storage"
)

// The crash tests run the deeplaked binary as a child process, load it
// from several clients at once, kill it with SIGKILL and check what a
// restart on the same data finds: every acknowledged transaction whole,
// every other one whole or absent, rolled-back and deleted rows absent.
//
// Row k of transaction txn has id txn*crashIDsPerTxn+k and values derived
// from (txn, k) alone, so the checker recomputes them.

const (
	crashIDsPerTxn = 10000
	crashWriters   = 4
	crashTable     = `CREATE TABLE t (id int8 PRIMARY KEY, txn int8, k int4, emb vector(64), tokens int32[128], note text)`
	crashColumns   = `id, txn, k, emb, tokens, note`
	// A transaction spills into a fragment past 4 MiB of row data, where
	// a NULL tensor counts its full width. Wide rows average about 1.8 kB,
	// so a large transaction of 2,600 to 3,600 rows writes one; a medium
	// one, of 1,500 to 3,800 mostly narrow rows (about 0.93 kB on average),
	// commits buffered rows, which the background flush moves into a
	// fragment once a table has more than 8,192.
	crashLargeMin, crashLargeMax   = 2600, 3600
	crashMediumMin, crashMediumMax = 1500, 3800
	crashFlushRows                 = 8192
	crashStmtRows                  = 500
)

// crashValues returns the text of row k of txn's emb, tokens and note
// columns as the server prints them, "NULL" for a NULL. Medium
// transactions (crashMedium) have mostly narrow rows: NULL tensors and a
// short note.
func crashValues(txn int64, k int) (emb, tokens, note string) {
	emb, tokens = "NULL", "NULL"
	wide := !crashMedium(txn) || k%10 == 0
	var b strings.Builder
	if wide {
		b.WriteByte('[')
		for i := range int64(64) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(float32((txn*131+int64(k)*17+i*7)%2048)/8-100), 'g', -1, 32))
		}
		b.WriteByte(']')
		emb = b.String()
		b.Reset()
		b.WriteByte('{')
		for i := range int64(128) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt((txn*7+int64(k)*13+i*31)%2000-1000, 10))
		}
		b.WriteByte('}')
		tokens = b.String()
	}
	if (txn+int64(k))%31 == 0 {
		return emb, tokens, "NULL"
	}
	fill := 400 + int((int64(k)*37+txn)%1200)
	if !wide {
		fill = int((int64(k)*37 + txn) % 40)
	}
	note = fmt.Sprintf("txn %d row %d: it's ", txn, k) + strings.Repeat(string(rune('a'+(txn+int64(k))%26)), fill)
	return emb, tokens, note
}

// The kinds of transaction a writer runs, by its sequence number
// (txn % 1,000,000). Each writer starts with a medium transaction, so the
// first background flush comes early.
func crashLarge(txn int64) bool { return txn%1_000_000%8 == 1 }
func crashMedium(txn int64) bool {
	seq := txn % 1_000_000 % 8
	return seq == 0 || seq == 3 || seq == 5
}

// crashInsert returns an INSERT of rows [from, from+n) of txn.
func crashInsert(txn int64, from, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO t VALUES ")
	for k := from; k < from+n; k++ {
		if k > from {
			b.WriteByte(',')
		}
		emb, tokens, note := crashValues(txn, k)
		fmt.Fprintf(&b, "(%d,%d,%d,%s,%s,%s)", txn*crashIDsPerTxn+int64(k), txn, k, sqlLiteral(emb), sqlLiteral(tokens), sqlLiteral(note))
	}
	return b.String()
}

// sqlLiteral quotes s, or returns "NULL" as it is.
func sqlLiteral(s string) string {
	if s == "NULL" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// crashLoad drives the clients and remembers what the server acknowledged.
type crashLoad struct {
	t    *testing.T
	seed uint64
	// stop ends the clients' loops; killed says errors are expected.
	stop, killed atomic.Bool
	vacuuming    atomic.Bool
	vacuums      atomic.Int64

	mu       sync.Mutex
	tried    map[int64]int // rows of every transaction sent
	acked    map[int64]int // rows of every transaction whose COMMIT returned
	rolled   map[int64]bool
	large    int // acknowledged transactions that spilled
	buffered int // rows of the others
	ackOrder []int64
	delTried map[int64]bool
	deleted  map[int64]bool // transactions whose DELETE was acknowledged
}

func newCrashLoad(t *testing.T, seed uint64) *crashLoad {
	return &crashLoad{t: t, seed: seed, tried: map[int64]int{}, acked: map[int64]int{}, rolled: map[int64]bool{},
		delTried: map[int64]bool{}, deleted: map[int64]bool{}}
}

// failf reports an error unless the server was killed, which explains it.
func (l *crashLoad) failf(format string, args ...any) {
	if !l.killed.Load() {
		l.t.Errorf(format, args...)
	}
}

// writer runs transactions until stopped: single multi-row INSERTs
// (implicit commits), explicit transactions of a few statements, medium
// ones whose rows are buffered until the background flush moves them into
// a fragment, large ones that spill into a fragment as they run, and some
// of each kind rolled back.
func (l *crashLoad) writer(ctx context.Context, conn *pgx.Conn, client int) {
	rng := rand.New(rand.NewPCG(l.seed, uint64(client)))
	for seq := int64(0); !l.stop.Load(); seq++ {
		txn := int64(client)*1_000_000 + seq
		var stmts []string
		var sizes []int
		n := 0
		add := func(rows int) {
			for rows > 0 {
				k := min(rows, crashStmtRows)
				stmts = append(stmts, crashInsert(txn, n, k))
				sizes = append(sizes, k)
				n += k
				rows -= k
			}
		}
		large := crashLarge(txn)
		switch {
		case large:
			add(crashLargeMin + rng.IntN(crashLargeMax-crashLargeMin))
		case crashMedium(txn):
			add(crashMediumMin + rng.IntN(crashMediumMax-crashMediumMin))
		case seq%4 == 2:
			add(1 + rng.IntN(30))
			add(1 + rng.IntN(30))
		default:
			add(1 + rng.IntN(100))
		}
		// Client 1 rolls back its first large transaction, whose rows are
		// already in a fragment.
		rollback := seq%7 == 3 || client == 1 && seq == 1
		explicit := rollback || len(stmts) > 1
		l.mu.Lock()
		l.tried[txn] = n
		l.rolled[txn] = rollback
		l.mu.Unlock()
		if explicit {
			if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
				l.failf("client %d: BEGIN: %v", client, err)
				return
			}
		}
		for i, q := range stmts {
			tag, err := conn.Exec(ctx, q)
			if err != nil {
				l.failf("client %d txn %d: INSERT: %v", client, txn, err)
				return
			}
			if tag.RowsAffected() != int64(sizes[i]) {
				l.failf("client %d txn %d: %s, want %d rows", client, txn, tag, sizes[i])
				return
			}
		}
		if explicit {
			end := "COMMIT"
			if rollback {
				end = "ROLLBACK"
			}
			tag, err := conn.Exec(ctx, end)
			if err != nil {
				l.failf("client %d txn %d: %s: %v", client, txn, end, err)
				return
			}
			if tag.String() != end {
				// COMMIT of a failed transaction answers ROLLBACK.
				l.failf("client %d txn %d: %s answered %q", client, txn, end, tag)
				return
			}
		}
		if rollback {
			continue
		}
		l.mu.Lock()
		l.acked[txn] = n
		l.ackOrder = append(l.ackOrder, txn)
		if large {
			l.large++
		} else {
			l.buffered += n
		}
		l.mu.Unlock()
	}
}

// deleter deletes whole acknowledged transactions, one DELETE each, until
// about half of them are gone.
func (l *crashLoad) deleter(ctx context.Context, conn *pgx.Conn) {
	rng := rand.New(rand.NewPCG(l.seed, 1000))
	for !l.stop.Load() {
		l.mu.Lock()
		var txn int64 = -1
		if len(l.delTried)*2 < len(l.ackOrder) {
			for range 5 {
				c := l.ackOrder[rng.IntN(len(l.ackOrder))]
				if !l.delTried[c] {
					txn = c
					break
				}
			}
		}
		if txn >= 0 {
			l.delTried[txn] = true
		}
		n := l.acked[txn]
		l.mu.Unlock()
		if txn < 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		tag, err := conn.Exec(ctx, fmt.Sprintf("DELETE FROM t WHERE id >= %d AND id < %d", txn*crashIDsPerTxn, (txn+1)*crashIDsPerTxn))
		if err != nil {
			l.failf("DELETE txn %d: %v", txn, err)
			return
		}
		if tag.RowsAffected() != int64(n) {
			l.failf("DELETE txn %d: %s, want %d rows", txn, tag, n)
			return
		}
		l.mu.Lock()
		l.deleted[txn] = true
		l.mu.Unlock()
	}
}

// vacuumer runs VACUUM t in a loop.
func (l *crashLoad) vacuumer(ctx context.Context, conn *pgx.Conn) {
	for !l.stop.Load() {
		l.vacuuming.Store(true)
		_, err := conn.Exec(ctx, "VACUUM t")
		l.vacuuming.Store(false)
		if err != nil {
			l.failf("VACUUM: %v", err)
			return
		}
		l.vacuums.Add(1)
	}
}

func (l *crashLoad) counts() (large, buffered, deleted int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.large, l.buffered, len(l.deleted)
}

// verify reads the whole table and checks it against what was sent and
// acknowledged.
func (l *crashLoad) verify(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	l.mu.Lock()
	defer l.mu.Unlock()
	perTxn := make(map[int64]int)
	seen := make(map[int64]bool)
	bad := 0
	badf := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	res := conn.PgConn().Exec(ctx, "SELECT "+crashColumns+" FROM t")
	rows := 0
	for res.NextResult() {
		rr := res.ResultReader()
		for rr.NextRow() {
			rows++
			v := rr.Values()
			id, err1 := strconv.ParseInt(string(v[0]), 10, 64)
			txn, err2 := strconv.ParseInt(string(v[1]), 10, 64)
			k, err3 := strconv.Atoi(string(v[2]))
			if err := errors.Join(err1, err2, err3); err != nil {
				badf("row %q %q %q: %v", v[0], v[1], v[2], err)
				continue
			}
			if id != txn*crashIDsPerTxn+int64(k) || seen[id] {
				badf("row id %d (txn %d, k %d) is wrong or repeated", id, txn, k)
				continue
			}
			seen[id] = true
			perTxn[txn]++
			emb, tokens, note := crashValues(txn, k)
			got := func(b []byte) string {
				if b == nil {
					return "NULL"
				}
				return string(b)
			}
			if got(v[3]) != emb || got(v[4]) != tokens || got(v[5]) != note {
				badf("row %d (txn %d, k %d) has other values than were inserted", id, txn, k)
			}
		}
		if _, err := rr.Close(); err != nil {
			t.Fatalf("reading the table after restart: %v", err)
		}
	}
	if err := res.Close(); err != nil {
		t.Fatalf("reading the table after restart: %v", err)
	}
	for txn, n := range perTxn {
		want, sent := l.tried[txn]
		switch {
		case !sent:
			badf("txn %d: %d rows of a transaction never sent", txn, n)
		case l.rolled[txn]:
			badf("txn %d: %d rows of a rolled-back transaction are visible", txn, n)
		case l.deleted[txn]:
			badf("txn %d: %d rows whose DELETE was acknowledged are back", txn, n)
		case n != want:
			badf("txn %d: %d of its %d rows are visible (acknowledged: %v)", txn, n, want, l.acked[txn] > 0)
		}
	}
	for txn, n := range l.acked {
		switch got := perTxn[txn]; {
		case l.deleted[txn] || got == n:
		case got == 0 && l.delTried[txn]:
			// Its DELETE was not acknowledged but did commit.
		default:
			badf("acknowledged txn %d: %d of its %d rows survived", txn, got, n)
		}
	}
	if got := queryText(t, conn, "SELECT count(*) FROM t")[0][0]; got != strconv.Itoa(rows) {
		t.Errorf("count(*) = %s, a scan of the table returned %d rows", got, rows)
	}
	// Point reads by key take the zone-map and primary key paths.
	probed := 0
	for txn, n := range l.acked {
		if l.deleted[txn] || perTxn[txn] == 0 && l.delTried[txn] || probed == 5 {
			// A DELETE that was in flight at the kill may have committed.
			continue
		}
		probed++
		k := n / 2
		_, _, note := crashValues(txn, k)
		got := queryText(t, conn, fmt.Sprintf("SELECT note FROM t WHERE id = %d", txn*crashIDsPerTxn+int64(k)))
		if len(got) != 1 || got[0][0] != note {
			t.Errorf("SELECT row %d of txn %d by id: %d rows (a full scan saw %d of its %d rows)", k, txn, len(got), perTxn[txn], n)
		}
	}
	unacked := 0
	for txn := range perTxn {
		if _, ok := l.acked[txn]; !ok {
			unacked++
		}
	}
	t.Logf("%d transactions sent, %d acknowledged (%d large, %d deletes); after restart %d rows of %d transactions, %d of them unacknowledged",
		len(l.tried), len(l.acked), l.large, len(l.deleted), rows, len(perTxn), unacked)
}

// checkWritable inserts a small and a large transaction after the
// restart, reads them back, and checks that keys are still enforced.
func (l *crashLoad) checkWritable(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	const small, large = 9_000_000, 9_000_001
	mustExec(t, conn, crashInsert(small, 0, 20))
	mustExec(t, conn, "BEGIN")
	for from := 0; from < crashLargeMin; from += crashStmtRows {
		mustExec(t, conn, crashInsert(large, from, min(crashStmtRows, crashLargeMin-from)))
	}
	mustExec(t, conn, "COMMIT")
	l.tried[small], l.acked[small] = 20, 20
	l.tried[large], l.acked[large] = crashLargeMin, crashLargeMin
	for _, txn := range []int64{small, large} {
		got := queryText(t, conn, fmt.Sprintf("SELECT count(*) FROM t WHERE txn = %d", txn))
		if got[0][0] != strconv.Itoa(l.acked[txn]) {
			t.Errorf("txn %d written after the restart: %s rows", txn, got[0][0])
		}
	}
	for txn, n := range l.acked {
		if l.deleted[txn] || l.delTried[txn] {
			// A DELETE in flight at the kill may have committed, which
			// frees the keys.
			continue
		}
		_, err := conn.Exec(context.Background(), crashInsert(txn, n-1, 1))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			t.Errorf("re-inserting row %d of acknowledged txn %d: %v, want 23505", n-1, txn, err)
		}
		break
	}
}

// crashSetup says where a crash test's server keeps its data.
type crashSetup struct {
	args []string // storage flags
	// store opens the object store for inspecting the data afterwards
	// (nil: the data directory's).
	store func(t *testing.T) storage.ObjectStore
}

// crashServer starts the binary on dataDir and kills it at the end of the
// test if it is still running.
func crashServer(t *testing.T, bin, dataDir string, setup crashSetup, extra ...string) (*proc, string) {
	t.Helper()
	addr := freePort(t)
	args := append([]string{"--listen", addr, "--data-dir", dataDir}, setup.args...)
	p := startProcess(t, bin, nil, append(args, extra...)...)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p, addr
}

func stopServer(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("server exit after SIGTERM: %v", err)
	}
}

// crashLogVersions opens the stopped server's storage and reports what
// its retained versions did: spilled writes, flushes, compactions.
func crashLogVersions(t *testing.T, dataDir string, setup crashSetup) map[string]int {
	t.Helper()
	opts := storage.Options{Dir: dataDir, NoCompaction: true, FlushRows: 1 << 30}
	if setup.store != nil {
		opts.Store = setup.store(t)
	}
	db, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vs, err := db.Versions("t")
	if err != nil {
		t.Fatal(err)
	}
	ops := make(map[string]int)
	for _, v := range vs {
		op := v.Op
		if op == "write" && v.Manifest != "" {
			op = "spilled write"
		}
		ops[op]++
	}
	t.Logf("retained versions: %v", ops)
	return ops
}

// TestKill9Crash builds the binary once and runs the crash scenarios.
func TestKill9Crash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server binary")
	}
	bin := buildBinary(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DEEPLAKED_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (set DEEPLAKED_CRASH_SEED to repeat)", seed)

	t.Run("ingest-local", func(t *testing.T) { crashDuringIngest(t, bin, seed, crashSetup{}) })
	t.Run("ingest-s3", func(t *testing.T) { crashDuringIngest(t, bin, seed, crashS3(t)) })
	// With the default 8 MB chunks every fragment is small and VACUUM
	// merges them; with 512 kB chunks a large transaction uploads chunks
	// while its statements run, long before it commits, and VACUUM must
	// leave them alone.
	t.Run("vacuum-local", func(t *testing.T) { crashDuringVacuum(t, bin, seed, crashSetup{}, "") })
	t.Run("vacuum-local-512kB", func(t *testing.T) { crashDuringVacuum(t, bin, seed, crashSetup{}, "512kB") })
	t.Run("vacuum-s3-512kB", func(t *testing.T) { crashDuringVacuum(t, bin, seed, crashS3(t), "512kB") })
}

// crashS3 starts an S3 server for the test and returns the flags that put
// a server's objects in a fresh bucket on it.
func crashS3(t *testing.T) crashSetup {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	bucket := gw.NewBucketName()
	return crashSetup{
		args: []string{"--storage", "s3://" + bucket + "/crash", "--s3-endpoint", gw.Endpoint},
		store: func(t *testing.T) storage.ObjectStore {
			o := gw.Options(bucket)
			o.Prefix = "crash"
			st, err := storage.NewS3Store(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

// crashDuringIngest kills the server 1–3 s into a sustained ingest by
// several clients.
func crashDuringIngest(t *testing.T, bin string, seed uint64, setup crashSetup) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := crashDataDir(t)
	p, addr := crashServer(t, bin, dataDir, setup)
	admin := connect(t, addr)
	mustExec(t, admin, crashTable)
	admin.Close(ctx)

	l := newCrashLoad(t, seed)
	var wg sync.WaitGroup
	for c := 1; c <= crashWriters; c++ {
		conn := connect(t, addr)
		wg.Go(func() { l.writer(ctx, conn, c) })
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	delay := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
	start := time.Now()
	// Kill no earlier than a large transaction's acknowledgment and
	// enough buffered rows for a background flush, so the run covers
	// fragments written by both.
	waitFor(t, 20*time.Second, "large transaction and flush", func() bool {
		large, buffered, _ := l.counts()
		return large > 0 && buffered > crashFlushRows && time.Since(start) >= delay
	})
	crashKill(t, l, p, &wg)
	t.Logf("killed after %v", time.Since(start).Round(time.Millisecond))
	crashKeepKilled(t, dataDir)

	p, addr = crashServer(t, bin, dataDir, setup)
	conn := connect(t, addr)
	l.verify(t, conn)
	l.checkWritable(t, conn)
	l.verify(t, conn)
	conn.Close(ctx)
	stopServer(t, p)
	// Every committed large transaction wrote a fragment, the one after
	// the restart too.
	ops := crashLogVersions(t, dataDir, setup)
	if ops["spilled write"] < 1+l.large {
		t.Errorf("%d large transactions acknowledged, %d spilled versions", 1+l.large, ops["spilled write"])
	}
}

// crashDuringVacuum kills the server while one client runs VACUUM in a
// loop over a table that writers fill with fragments and a deleter thins
// out. chunkSize is the table's chunk_size, "" for the default.
func crashDuringVacuum(t *testing.T, bin string, seed uint64, setup crashSetup, chunkSize string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := crashDataDir(t)
	// Keeping only the current version lets VACUUM drop deleted rows and
	// delete the objects of the fragments it compacted away.
	p, addr := crashServer(t, bin, dataDir, setup, "--version-retention", "0s")
	admin := connect(t, addr)
	ddl := crashTable
	if chunkSize != "" {
		ddl += ` WITH (chunk_size = '` + chunkSize + `')`
	}
	mustExec(t, admin, ddl)
	admin.Close(ctx)

	l := newCrashLoad(t, seed)
	var wg sync.WaitGroup
	for c := 1; c <= crashWriters; c++ {
		conn := connect(t, addr)
		wg.Go(func() { l.writer(ctx, conn, c) })
	}
	start := time.Now()
	waitFor(t, 20*time.Second, "large transactions and a flush", func() bool {
		large, buffered, _ := l.counts()
		return large >= 2 && buffered > crashFlushRows
	})
	delConn, vacConn := connect(t, addr), connect(t, addr)
	wg.Go(func() { l.deleter(ctx, delConn) })
	wg.Go(func() { l.vacuumer(ctx, vacConn) })
	waitFor(t, 20*time.Second, "2 VACUUMs and 5 deletes", func() bool {
		_, _, deleted := l.counts()
		return l.vacuums.Load() >= 2 && deleted >= 5
	})
	rng := rand.New(rand.NewPCG(seed, 8))
	time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
	waitFor(t, 10*time.Second, "a VACUUM in progress", l.vacuuming.Load)
	time.Sleep(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
	crashKill(t, l, p, &wg)
	t.Logf("killed after %v, %d VACUUMs done", time.Since(start).Round(time.Millisecond), l.vacuums.Load())
	crashKeepKilled(t, dataDir)

	p, addr = crashServer(t, bin, dataDir, setup, "--version-retention", "0s")
	conn := connect(t, addr)
	l.verify(t, conn)
	// VACUUM after the crash collects what the killed one left behind and
	// keeps every row.
	mustExec(t, conn, "VACUUM t")
	l.verify(t, conn)
	l.checkWritable(t, conn)
	mustExec(t, conn, "DELETE FROM t WHERE txn = 9000000")
	l.mu.Lock()
	l.deleted[9000000] = true
	l.mu.Unlock()
	mustExec(t, conn, "VACUUM t")
	l.verify(t, conn)
	conn.Close(ctx)
	stopServer(t, p)
	crashLogVersions(t, dataDir, setup)
}

// crashDataDir returns the test's data directory. With DEEPLAKED_CRASH_KEEP
// set to a directory, a failed test's data directory is copied there.
func crashDataDir(t *testing.T) string {
	dir := t.TempDir()
	// The server refuses a data directory others can read; TempDir's is
	// 0755.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keep := os.Getenv("DEEPLAKED_CRASH_KEEP")
		if !t.Failed() || keep == "" {
			return
		}
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_")+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		if out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput(); err != nil {
			t.Logf("keeping %s: %v: %s", dir, err, out)
			return
		}
		t.Logf("data directory kept in %s", dst)
		if _, err := os.Stat(crashKilledDir(dir)); err == nil {
			exec.Command("cp", "-a", crashKilledDir(dir), dst+"-killed").Run()
			t.Logf("as the kill left it: %s-killed", dst)
		}
	})
	return dir
}

// crashKilledDir is where crashKeepKilled copies dataDir.
func crashKilledDir(dataDir string) string { return dataDir + "-killed" }

// crashKeepKilled copies the data directory as the kill left it, before the
// restart recovers it, when DEEPLAKED_CRASH_KEEP is set.
func crashKeepKilled(t *testing.T, dataDir string) {
	if os.Getenv("DEEPLAKED_CRASH_KEEP") == "" {
		return
	}
	if out, err := exec.Command("cp", "-a", dataDir, crashKilledDir(dataDir)).CombinedOutput(); err != nil {
		t.Logf("copying %s: %v: %s", dataDir, err, out)
	}
}

// crashKill kills the server with SIGKILL and waits for the clients.
func crashKill(t *testing.T, l *crashLoad, p *proc, wg *sync.WaitGroup) {
	t.Helper()
	l.killed.Store(true)
	l.stop.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if t.Failed() {
			t.FailNow()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCorruptChunkIsXX001 flips bytes of stored chunk objects and reads
// them through SQL: the client gets SQLSTATE XX001 naming the table, never
// wrong values, and the server goes on serving.
func TestCorruptChunkIsXX001(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := server.Start(ctx, server.Options{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn := connect(t, srv.Addr())
	defer conn.Close(ctx)
	mustExec(t, conn, `CREATE TABLE damaged (id int8 PRIMARY KEY, txn int8, k int4, emb vector(64), tokens int32[128], note text)`)
	mustExec(t, conn, `CREATE TABLE intact (id int8 PRIMARY KEY, note text)`)
	mustExec(t, conn, strings.Replace(crashInsert(1, 0, 1000), "INTO t", "INTO damaged", 1))
	mustExec(t, conn, `INSERT INTO intact VALUES (1, 'one'), (2, 'two')`)
	if err := srv.DB().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := srv.DB().Table("damaged")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := srv.DB().Store().List(ctx, fmt.Sprintf("tables/%d/frags/", tbl.ID))
	if err != nil {
		t.Fatal(err)
	}
	// flip changes one byte of the chunk of column col, at offset at (a
	// negative offset counts from the middle).
	flip := func(col, at int) {
		t.Helper()
		suffix := fmt.Sprintf("/%04x-00000000.dlc", col)
		for _, k := range keys {
			if !strings.HasSuffix(k, suffix) {
				continue
			}
			path := filepath.Join(dir, "objects", filepath.FromSlash(k))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if at < 0 {
				at = len(data) / 2
			}
			data[at] ^= 0x10
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("no chunk of column %d among %v", col, keys)
	}
	wantXX001 := func(q string) {
		t.Helper()
		_, err := conn.Exec(ctx, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "XX001" || !strings.Contains(pe.Message, `"damaged"`) {
			t.Errorf("%s: %v; want SQLSTATE XX001 naming table \"damaged\"", q, err)
			return
		}
		t.Logf("%s: %s", q, pe.Message)
	}
	flip(3, -1) // a byte of emb's values
	flip(5, 9)  // a byte of note's header
	wantXX001(`SELECT emb FROM damaged`)
	wantXX001(`SELECT sum(k) FROM damaged WHERE note IS NOT NULL`)
	wantXX001(`SELECT emb FROM damaged`) // again: nothing cached the damage away

	// Columns whose chunks are intact still read, and the rest of the
	// server is untouched.
	if got := queryText(t, conn, `SELECT count(*), sum(k) FROM damaged`); got[0][0] != "1000" || got[0][1] != "499500" {
		t.Errorf("intact columns of the damaged table: %v", got)
	}
	emb, tokens, _ := crashValues(1, 7)
	if got := queryText(t, conn, `SELECT tokens FROM damaged WHERE id = 10007`); len(got) != 1 || got[0][0] != tokens {
		t.Errorf("an intact column of row 7: %v", got)
	}
	if got := queryText(t, conn, `SELECT note FROM intact ORDER BY id`); len(got) != 2 || got[1][0] != "two" {
		t.Errorf("another table: %v", got)
	}
	other := connect(t, srv.Addr())
	defer other.Close(ctx)
	mustExec(t, other, `INSERT INTO damaged (id, txn, k, emb) VALUES (-1, -1, -1, '`+emb+`')`)
	if got := queryText(t, other, `SELECT emb FROM damaged WHERE id = -1`); len(got) != 1 || got[0][0] != emb {
		t.Errorf("a row written after the damage: %v", got)
	}
}

package scaleout

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/internal/proctest"
	"github.com/deeplaked/deeplaked/internal/s3test"
)

const (
	// writeFor is how long servers 1 and 2 are written to.
	writeFor = 20 * time.Second
	// writersPerServer is the number of writing connections on each of
	// servers 1 and 2.
	writersPerServer = 3
)

// TestThreeServersUnderLoad runs three servers on one S3 prefix, all with
// --durability bucket and a 200ms refresh. Servers 1 and 2 take
// concurrent writes from several connections each: pairs inserted with
// primary keys of their own and of a range both write (23505), serial
// values returned by RETURNING, updates and deletes of keys the other
// server touches too (40001), COPY batches, transaction blocks, VACUUM,
// and CREATE/DROP of scratch tables both servers share. Server 3 reads:
// a transaction reads count and sum twice across refreshes, and tensor
// streams (whole, or two shards of one epoch) must each see one snapshot.
// Server 1 is killed with SIGKILL while it commits and restarted on its
// data directory; the storage is down for 1.5 s (statements then may fail
// with 58030, or 08007 when a commit's outcome is unknown); then server 2
// is killed while it runs a VACUUM. At the end every server, refreshed,
// holds the same rows, and they are what the clients were told: every
// acknowledged write is there, no failed one is, no key or serial value
// twice.
//
// The outage stays under three heartbeats: a server whose heartbeat
// lapses longer is taken for dead (TestPausedWriterKeepsItsObjects).
func TestThreeServersUnderLoad(t *testing.T) {
	runLoad(t, writeFor, []kill{
		{after: 4 * time.Second, server: 1},
		{after: 9 * time.Second, server: 0, down: 1500 * time.Millisecond},
		{after: 13 * time.Second, server: 2, vacuum: true},
	})
}

// kill is a SIGKILL of a server (1 or 2) while a write of it is in
// flight, some time after the writes began, and its restart on its data
// directory and address.
type kill struct {
	after  time.Duration
	server int
	// vacuum: wait for a VACUUM in flight rather than any write.
	vacuum bool
	// down: server 0 is the storage (versitygw), stopped for down, while
	// a write of server 1 is in flight, then started again.
	down time.Duration
}

// runLoad runs the workload for writeFor with the kills, then compares
// the servers with each other and with the record.
func runLoad(t *testing.T, writeFor time.Duration, kills []kill) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	loc := "s3://" + gw.NewBucketName() + "/scaleout"
	// No retention of old versions: each VACUUM expires them and deletes
	// the objects no snapshot of any server reads.
	common := []string{"--storage", loc, "--s3-endpoint", gw.Endpoint, "--durability", "bucket",
		"--refresh-interval", "200ms", "--version-retention", "1ms"}
	s1 := proctest.Start(t, nil, common...)
	s2 := proctest.Start(t, nil, append(common, "--attach")...)
	s3 := proctest.Start(t, nil, append(common, "--attach")...)
	servers := []*proctest.Server{s1, s2, s3}
	var killedLogs []string
	defer func() {
		if t.Failed() {
			for _, l := range killedLogs {
				t.Logf("%s", l)
			}
			for i, s := range servers {
				t.Logf("server %d's log:\n%s", i+1, s.Log())
			}
		}
	}()
	dsn := func(s *proctest.Server) string { return s.DSN("postgres", "", "postgres") }
	ctx := context.Background()

	c1 := connect(t, dsn(s1))
	exec(t, c1, createTable)
	c1.Close(ctx)
	for _, s := range servers[1:] {
		c := connect(t, dsn(s))
		exec(t, c, "SELECT deeplake_refresh()")
		c.Close(ctx)
	}

	h := newHistory()
	var inflight, vacuums [3]atomic.Int32
	var down outage
	start := time.Now()
	deadline := start.Add(writeFor)
	var wg sync.WaitGroup
	for sv := 1; sv <= 2; sv++ {
		for i := 0; i < writersPerServer; i++ {
			w := newWriter(t, (sv-1)*writersPerServer+i, sv, dsn(servers[sv-1]), h, &inflight[sv], &vacuums[sv], &down)
			wg.Add(1)
			go func() { defer wg.Done(); w.run(deadline) }()
		}
	}
	var txns, changed, streams, streamed, txnsExcused, streamsExcused int
	wg.Add(2)
	go func() { defer wg.Done(); txns, changed, txnsExcused = queryLoop(t, dsn(s3), deadline, &down) }()
	go func() { defer wg.Done(); streams, streamed, streamsExcused = streamLoop(t, dsn(s3), deadline, &down) }()

	var killed []time.Time
	for _, k := range kills {
		time.Sleep(time.Until(start.Add(k.after)))
		busy := &inflight[max(k.server, 1)]
		if k.vacuum {
			busy = &vacuums[k.server]
		}
		for busy.Load() == 0 && time.Since(start) < writeFor {
			time.Sleep(time.Millisecond)
		}
		if k.server == 0 {
			at := time.Now()
			down.begin()
			gw.Restart(t, k.down)
			down.end()
			t.Logf("the storage down %v after the writes began, back %v later", at.Sub(start).Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
			continue
		}
		s := servers[k.server-1]
		if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		killed = append(killed, at)
		if !s.WaitExit(10 * time.Second) {
			t.Fatalf("server %d did not exit on SIGKILL", k.server)
		}
		killedLogs = append(killedLogs, fmt.Sprintf("server %d's log until the kill at %s:\n%s", k.server, at.Format("15:04:05.000"), s.Log()))
		servers[k.server-1] = proctest.Start(t, nil, append(common, "--listen", s.Addr, "--data-dir", s.DataDir)...)
		t.Logf("server %d killed %v after the writes began, serving again %v later",
			k.server, at.Sub(start).Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
	}
	wg.Wait()
	t.Logf("readers stopped %v after the writes", time.Since(deadline).Round(time.Millisecond))

	stopped := time.Now()
	// Every server, refreshed, holds the same rows and scratch tables.
	var contents [][]row
	var scratch [][]string
	for i, s := range servers {
		if !s.Alive() {
			t.Fatalf("server %d died", i+1)
		}
		c := connect(t, dsn(s))
		exec(t, c, "SELECT deeplake_refresh()")
		rows := tableRows(t, c)
		if err := sameAsStream(c, rows); err != nil {
			t.Errorf("server %d: %v", i+1, err)
		}
		contents = append(contents, rows)
		scratch = append(scratch, scratchTableNames(t, c))
		c.Close(ctx)
	}
	for i := 1; i < 3; i++ {
		if !slices.Equal(contents[0], contents[i]) {
			t.Errorf("server %d holds %d rows, server 1 %d; first difference: %s",
				i+1, len(contents[i]), len(contents[0]), firstDiff(contents[0], contents[i]))
		}
		if !slices.Equal(scratch[0], scratch[i]) {
			t.Errorf("server %d has scratch tables %v, server 1 %v", i+1, scratch[i], scratch[0])
		}
	}
	errs := h.check(contents[0])
	for i, e := range errs {
		if i == 20 {
			t.Errorf("... and %d more", len(errs)-20)
			break
		}
		t.Error(e)
	}
	landed, unknowns := h.landed(contents[0])
	frags, _ := filepath.Glob(filepath.Join(gw.Dir, "*", "scaleout", "tables", "*", "frags", "*"))
	t.Logf("the servers compared in %v; %d fragments in the bucket", time.Since(stopped).Round(time.Millisecond), len(frags))

	t.Logf("%d rows at the end; of %d inserts and updates cut by a kill or outage, %d committed; %d transactions read twice (%d with the table changed under them, %d ended by the outage); %d streams (%d rows, %d ended by the outage); writes:%s",
		len(contents[0]), unknowns, landed, txns, changed, txnsExcused, streams, streamed, streamsExcused, h.summary())
	// The workload did what it is for.
	for _, c := range []struct {
		what string
		n    int
	}{
		{"writes acknowledged on server 1 after its restart", h.total(func(o *op) bool {
			return o.server == 1 && o.out == acked && len(killed) > 0 && o.start.After(killed[0])
		})},
		{"writes acknowledged on server 2", h.total(func(o *op) bool { return o.server == 2 && o.out == acked })},
		{"inserts refused with 23505", h.total(func(o *op) bool { return o.code == "23505" })},
		{"statements the kill of server 1 cut", h.counter("s1 statements cut")},
		{"transactions reading twice", txns},
		{"streams", streams},
	} {
		if c.n == 0 {
			t.Errorf("no %s", c.what)
		}
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func exec(t *testing.T, c *pgx.Conn, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func tableRows(t *testing.T, c *pgx.Conn) []row {
	t.Helper()
	rows, err := c.Query(context.Background(), "SELECT k, v, sid FROM t ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.k, &r.v, &r.sid); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func scratchTableNames(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, err := c.Query(context.Background(),
		"SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'scratch%' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func firstDiff(a, b []row) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d rows)", len(a), len(b))
}

// sameAsStream checks that a tensor stream of t holds rows (sorted by k).
func sameAsStream(c *pgx.Conn, rows []row) error {
	s, err := stream.Stream(context.Background(), c.PgConn(), "SELECT k, v FROM t", stream.Options{BatchSize: 1000})
	if err != nil {
		return err
	}
	defer s.Close()
	var got []row
	for s.Next() {
		b := s.Batch()
		ks, vs := b.Column("k").Int64(), b.Column("v").Int64()
		for j, k := range ks {
			got = append(got, row{k: k, v: vs[j]})
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	slices.SortFunc(got, func(a, b row) int { return cmp.Compare(a.k, b.k) })
	want := make([]row, len(rows))
	for i, r := range rows {
		want[i] = row{k: r.k, v: r.v}
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("a stream holds %d rows, SELECT %d; first difference: %s", len(got), len(want), firstDiff(want, got))
	}
	return nil
}

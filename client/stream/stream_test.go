package stream_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

const rows = 100

func setup(t *testing.T) string {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), FlushRows: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dsn := "postgres://tester@" + srv.Addr() + "/db?sslmode=disable"
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	for _, q := range []string{
		`CREATE TABLE samples (id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(4), image BLOB, label INT, t uint8[2][2], r float32[], big bigint, s smallint, ok boolean)`,
		`INSERT INTO samples (text, embedding, image, label, t, r, big, s, ok)
		 SELECT 'row' || g, ('[' || g || ',1,2,3]')::vector, '\xdead'::bytea,
		        CASE WHEN g % 3 = 0 THEN NULL ELSE g % 5 END, '{{1,2},{3,4}}'::uint8[2][2],
		        ('{' || g || '}')::float32[], g * 1000000000000, g, g % 2 = 0
		 FROM generate_series(1, 100) g`,
	} {
		if err := conn.Exec(context.Background(), q).Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dsn
}

func connect(t *testing.T, dsn string) *pgconn.PgConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// ids streams query with opts and returns the id column, batch by batch.
func ids(t *testing.T, dsn, query string, opts stream.Options) (all []int32, sizes []int) {
	t.Helper()
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, query, opts)
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
		b := s.Batch()
		all = append(all, b.Column("id").Int32()...)
		sizes = append(sizes, b.Rows)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return all, sizes
}

func TestStreamEndToEnd(t *testing.T) {
	dsn := setup(t)
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "samples", stream.Options{BatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for s.Next() {
		b := s.Batch()
		sizes = append(sizes, b.Rows)
		if b.Index != uint64(len(sizes)-1) {
			t.Fatalf("batch index %d, want %d", b.Index, len(sizes)-1)
		}
		if len(sizes) > 1 {
			continue
		}
		emb := b.Column("embedding")
		if got := emb.Shape(); !slices.Equal(got, []int{32, 4}) {
			t.Fatalf("embedding shape %v", got)
		}
		if got := emb.Float32()[4*4 : 5*4]; !slices.Equal(got, []float32{5, 1, 2, 3}) {
			t.Fatalf("embedding row 4: %v", got)
		}
		lab := b.Column("label")
		if lab.Int32()[0] != 1 || !lab.IsNull(2) || lab.IsNull(1) {
			t.Fatalf("labels %v", lab.Int32()[:4])
		}
		if got := b.Column("t").Uint8()[:4]; !slices.Equal(got, []uint8{1, 2, 3, 4}) {
			t.Fatalf("t row 0: %v", got)
		}
		r := b.Column("r")
		lo, hi := r.Row(6)
		if got := r.Float32()[lo:hi]; !slices.Equal(got, []float32{7}) || !slices.Equal(r.RowShape(6), []uint32{1}) {
			t.Fatalf("r row 6: %v", got)
		}
		if b.Column("text").String(0) != "row1" || string(b.Column("image").Bytes(0)) != "\xde\xad" {
			t.Fatal("bytes columns")
		}
		if b.Column("big").Int64()[1] != 2000000000000 || b.Column("s").Int16()[2] != 3 || !b.Column("ok").Bool()[1] {
			t.Fatal("int64, int16 or bool column")
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sizes, []int{32, 32, 32, 4}) || s.Rows() != rows {
		t.Fatalf("batches %v, %d rows", sizes, s.Rows())
	}
	// The connection is usable after the stream.
	if err := conn.Exec(context.Background(), "SELECT 1").Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStreamOptions(t *testing.T) {
	dsn := setup(t)
	// The streams compared here (seeds, shards, START_BATCH) must see one
	// layout: VACUUM flushes the buffered rows now, not the server's
	// flusher (past 32 rows) in the middle of the test.
	conn := connect(t, dsn)
	if err := conn.Exec(context.Background(), "VACUUM samples").Close(); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	want := make([]int32, rows)
	for i := range want {
		want[i] = int32(i + 1)
	}
	a, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 10, Shuffle: true, Seed: 7})
	b, _ := ids(t, dsn, "SELECT id FROM samples", stream.Options{BatchSize: 10, Shuffle: true, Seed: 7})
	if !slices.Equal(slices.Sorted(slices.Values(a)), want) || !slices.Equal(slices.Sorted(slices.Values(b)), want) {
		t.Fatal("a shuffled stream lost or repeated rows")
	}
	again, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 10, Shuffle: true, Seed: 7})
	if !slices.Equal(a, again) {
		t.Fatal("the same seed gave another order")
	}
	var shards []int32
	for r := 0; r < 3; r++ {
		part, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 7, Shuffle: true, Seed: 3, Rank: r, World: 3})
		shards = append(shards, part...)
	}
	if !slices.Equal(slices.Sorted(slices.Values(shards)), want) {
		t.Fatal("shards do not partition the table")
	}
	if _, sizes := ids(t, dsn, "samples", stream.Options{BatchSize: 32, DropLast: true}); !slices.Equal(sizes, []int{32, 32, 32}) {
		t.Fatalf("DROP_LAST: batches %v", sizes)
	}
	if rest, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 10, Shuffle: true, Seed: 7, StartBatch: 3}); !slices.Equal(rest, a[30:]) {
		t.Fatal("START_BATCH 3 is not the rest of the epoch")
	}
}

func TestStreamServerError(t *testing.T) {
	dsn := setup(t)
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "no_such_table", stream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
	}
	var pgErr *pgconn.PgError
	if !errors.As(s.Err(), &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("got %v, want a 42P01 PgError", s.Err())
	}
}

func TestStreamCloseEarly(t *testing.T) {
	dsn := setup(t)
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "samples", stream.Options{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Next() {
		t.Fatal(s.Err())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Next() {
		t.Fatal("Next after Close")
	}
	// The COPY was cut in the middle: the connection is closed, not left
	// mid-answer.
	if !conn.IsClosed() {
		t.Fatal("the connection is open after a stream closed early")
	}
}

// TestStreamErrorMidway gets a server error after frames were sent: Err is
// the server's error and the connection is usable after it.
func TestStreamErrorMidway(t *testing.T) {
	dsn := setup(t)
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "SELECT g, 1 / (g - 5000) AS x FROM generate_series(1, 10000) g", stream.Options{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s.Next() {
		n += s.Batch().Rows
	}
	var pgErr *pgconn.PgError
	if !errors.As(s.Err(), &pgErr) || pgErr.Code != "22012" {
		t.Fatalf("got %v, want a 22012 PgError", s.Err())
	}
	if n == 0 || n >= 5000 {
		t.Fatalf("%d rows before the error, want some, fewer than 5000", n)
	}
	rr := conn.ExecParams(context.Background(), "SELECT count(*) FROM samples", nil, nil, nil, nil).Read()
	if rr.Err != nil || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != "100" {
		t.Fatalf("after the error: %v %q", rr.Err, rr.Rows)
	}
}

func TestStreamAll(t *testing.T) {
	dsn := setup(t)
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "SELECT id, label FROM samples WHERE label IS NOT NULL", stream.Options{BatchSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for b, err := range s.All() {
		if err != nil {
			t.Fatal(err)
		}
		n += b.Rows
	}
	if want := rows - rows/3; n != want {
		t.Fatalf("%d rows, want %d", n, want)
	}
}

// TestStreamInSnapshot streams inside a transaction block that reads an
// exported snapshot (BEGIN; SET TRANSACTION SNAPSHOT): the rows are the
// snapshot's, and the block goes on after the stream.
func TestStreamInSnapshot(t *testing.T) {
	dsn := setup(t)
	ctx := context.Background()
	exporter := connect(t, dsn)
	defer exporter.Close(ctx)
	res := exporter.Exec(ctx, "BEGIN; SELECT pg_export_snapshot()")
	results, err := res.ReadAll()
	if err != nil || len(results) != 2 || len(results[1].Rows) != 1 {
		t.Fatalf("export: %v", err)
	}
	snap := string(results[1].Rows[0][0])
	other := connect(t, dsn)
	defer other.Close(ctx)
	if err := other.Exec(ctx, "DELETE FROM samples WHERE id <= 50").Close(); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	defer conn.Close(ctx)
	if err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT '"+snap+"'").Close(); err != nil {
		t.Fatal(err)
	}
	s, err := stream.Stream(ctx, conn, "samples", stream.Options{BatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s.Next() {
		n += s.Batch().Rows
	}
	if err := s.Err(); err != nil || n != rows {
		t.Fatalf("%d rows in the snapshot, want %d: %v", n, rows, err)
	}
	if conn.TxStatus() != 'T' {
		t.Fatalf("transaction status %q after the stream", conn.TxStatus())
	}
	if err := conn.Exec(ctx, "COMMIT").Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamEpoch: two shards of one epoch, streamed on two connections
// with a DELETE between them, partition the rows of the first's snapshot.
func TestStreamEpoch(t *testing.T) {
	dsn := setup(t)
	ctx := context.Background()
	first, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 16, Shuffle: true, Seed: 3, Rank: 0, World: 2, Epoch: "run 'a':0"})
	other := connect(t, dsn)
	defer other.Close(ctx)
	if err := other.Exec(ctx, "DELETE FROM samples WHERE id % 2 = 0").Close(); err != nil {
		t.Fatal(err)
	}
	second, _ := ids(t, dsn, "samples", stream.Options{BatchSize: 16, Shuffle: true, Seed: 3, Rank: 1, World: 2, Epoch: "run 'a':0"})
	seen := make(map[int32]int)
	for _, v := range append(first, second...) {
		seen[v]++
	}
	for id := int32(1); id <= rows; id++ {
		if seen[id] != 1 {
			t.Fatalf("row %d sent %d times by the epoch's shards (%d + %d rows)", id, seen[id], len(first), len(second))
		}
	}
	// A new epoch reads the table as it is now.
	now, _ := ids(t, dsn, "samples", stream.Options{Epoch: "run 'a':1"})
	if len(now) != rows/2 {
		t.Fatalf("the next epoch read %d rows, want %d", len(now), rows/2)
	}
}

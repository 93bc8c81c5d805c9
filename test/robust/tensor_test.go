package robust

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/internal/proctest"
)

// TestTensorTypeTooLarge declares tensor and vector types whose values
// could not be held: each is refused where the type is written, and the
// server goes on.
func TestTensorTypeTooLarge(t *testing.T) {
	srv := proctest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres", "", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, c := range []struct{ sql, code, msg string }{
		{"CREATE TABLE big (x uint8[100000][100000])", "54000", "tensor type uint8[100000][100000] is 10000000000 bytes"},
		{"CREATE TABLE big (x float64[2147483647][2147483647][2147483647])", "54000", "over the 1 GB limit of a value"},
		{"SELECT NULL::uint8[100000][100000]", "54000", "over the 1 GB limit of a value"},
		{"CREATE TABLE big (x uint8[1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1])", "54000", "number of tensor dimensions (33) exceeds the maximum allowed (32)"},
		{"CREATE TABLE big (v vector(16001))", "22023", "dimensions for type vector cannot exceed 16000"},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
			t.Errorf("%s: got %v, want %s %q", c.sql, err, c.code, c.msg)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE fits (x uint8[1000][1000], v vector(16000))"); err != nil {
		t.Fatalf("a type within the limits: %v", err)
	}
	if !srv.Alive() {
		t.Fatalf("server died:\n%s", srv.Log())
	}
}

// TestTensorStreamNullRowsBounded streams a table of NULL vector(16000)
// rows. A BATCH_SIZE whose frame would pass the frame limit is refused
// before any frame is built; one that fits streams every row while the
// server's memory stays near a frame's size.
func TestTensorStreamNullRowsBounded(t *testing.T) {
	srv := proctest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres", "", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const rows = 20000
	for _, q := range []string{
		"CREATE TABLE vn (id int, t vector(16000))",
		"INSERT INTO vn SELECT g, NULL FROM generate_series(1, 20000) g",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, base := srv.RSS(t)
	t.Logf("peak RSS after loading: %d MB", base>>20)

	// In order, shuffled, exactly shuffled, sharded: refused before any
	// frame.
	for _, o := range []stream.Options{
		{BatchSize: 1 << 20},
		{BatchSize: 1 << 20, Shuffle: true},
		{BatchSize: 1 << 20, ExactShuffle: true},
		{BatchSize: 1 << 20, World: 2},
	} {
		b, err := stream.Stream(ctx, conn.PgConn(), "SELECT t FROM vn", o)
		if err != nil {
			t.Fatal(err)
		}
		if b.Next() {
			t.Fatalf("%+v: a frame of %d rows came", o, b.Batch().Rows)
		}
		var pe *pgconn.PgError
		if err := b.Err(); !errors.As(err, &pe) || pe.Code != "54000" ||
			!strings.Contains(pe.Message, `1048576 rows of column t (vector(16000), 64000 bytes a row)`) ||
			!strings.Contains(pe.Message, "lower BATCH_SIZE") {
			t.Fatalf("%+v: got %v, want 54000 naming the column and its size", o, err)
		}
		b.Close()
	}
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, "COPY (SELECT t FROM vn) TO GPU WITH (BATCH_SIZE 1048576)"); !errors.As(err, &pe) || pe.Code != "54000" {
		t.Fatalf("TO GPU: got %v, want 54000", err)
	}
	_, peak := srv.RSS(t)
	t.Logf("peak RSS after the refused stream: %d MB", peak>>20)
	if peak > base+64<<20 {
		t.Errorf("the refused stream took the server's peak memory from %d MB to %d MB", base>>20, peak>>20)
	}

	// 256 rows a frame: 16 MB frames of zeros and a validity buffer, in
	// order and through the shuffle buffer (whose slots hold nothing for
	// a NULL) or an exact shuffle.
	for _, o := range []stream.Options{
		{BatchSize: 256},
		{BatchSize: 256, Shuffle: true, Seed: 1},
		{BatchSize: 256, ExactShuffle: true, Seed: 1},
	} {
		b, err := stream.Stream(ctx, conn.PgConn(), "SELECT id, t FROM vn", o)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for b.Next() {
			bt := b.Batch()
			col := bt.Column("t")
			for i := range bt.Rows {
				if !col.IsNull(i) {
					t.Fatalf("%+v: row %d of a frame is not NULL", o, i)
				}
			}
			n += bt.Rows
		}
		if err := b.Err(); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		b.Close()
		if n != rows {
			t.Fatalf("%+v: streamed %d rows, want %d", o, n, rows)
		}
		_, peak = srv.RSS(t)
		t.Logf("%+v: peak RSS %d MB", o, peak>>20)
		if peak > base+256<<20 {
			t.Errorf("%+v: streaming 16 MB frames took the server's peak memory from %d MB to %d MB", o, base>>20, peak>>20)
		}
	}
	if !srv.Alive() {
		t.Fatalf("server died:\n%s", srv.Log())
	}
}

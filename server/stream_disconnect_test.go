package server_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// errGone is what a client's writer returns when it stops reading.
var errGone = errors.New("client gone")

// goneAfter is a COPY TO writer that takes n CopyData messages and then
// fails, making pgconn drop the connection in the middle of the stream.
type goneAfter struct{ n int }

func (g *goneAfter) Write(p []byte) (int, error) {
	if g.n == 0 {
		return 0, errGone
	}
	g.n--
	return len(p), nil
}

// TestTensorStreamClientGone: a client that disconnects in the middle of a
// tensor stream frees what its stream held at once: the server's
// goroutines go back to where they were, and other clients go on.
func TestTensorStreamClientGone(t *testing.T) {
	srv := startServer(t, t.TempDir())
	defer srv.Close()
	ctx := context.Background()
	setup := connect(t, srv.Addr())
	defer setup.Close(ctx)
	// 20,000 rows of 1 KiB: far more than the socket buffers hold, so the
	// server is still writing when the client leaves.
	if _, err := setup.Exec(ctx, "CREATE TABLE frames (id int, label int, emb float32[256])"); err != nil {
		t.Fatal(err)
	}
	emb := "{" + strings.TrimSuffix(strings.Repeat("0.5,", 256), ",") + "}"
	if _, err := setup.Exec(ctx, "INSERT INTO frames SELECT g, g % 10, '"+emb+"' FROM generate_series(1, 20000) g"); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, "VACUUM frames"); err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()
	for _, opts := range []string{"BATCH_SIZE 64", "BATCH_SIZE 64, SHUFFLE true, SEED 3", "BATCH_SIZE 64, SHUFFLE 'exact'"} {
		conn, err := pgconn.Connect(ctx, "postgres://anyone@"+srv.Addr()+"/postgres?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.CopyTo(ctx, &goneAfter{n: 3}, "COPY frames TO STDOUT WITH (FORMAT tensor, "+opts+")")
		if !errors.Is(err, errGone) {
			t.Fatalf("%s: %v, want the writer's error", opts, err)
		}
		conn.Close(ctx)
		if n := waitGoroutines(t, baseline, 10*time.Second); n > baseline {
			t.Fatalf("%s: %d goroutines after the client left, %d before", opts, n, baseline)
		}
	}
	// The server serves on.
	var n int64
	if err := setup.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n); err != nil || n != 20000 {
		t.Fatalf("count after the disconnects: %d, %v", n, err)
	}
}

package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/server"
)

// TestCancelLongQueries stops queries that would run for minutes (a cross
// join counted, sorted, aggregated) with a CancelRequest and with
// statement_timeout: each fails fast with 57014 and the connection goes on.
func TestCancelLongQueries(t *testing.T) {
	srv := startWith(t, server.Options{})
	conn, err := dial(t, connString(t, srv, "canceler", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	pc := conn.PgConn()
	ctx := context.Background()
	mustExec(t, conn, "CREATE TABLE big (x int, s text)")
	var data bytes.Buffer
	for i := range 4000 {
		fmt.Fprintf(&data, "%d\trow %d\n", i, i)
	}
	if _, err := pc.CopyFrom(ctx, &data, "COPY big FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	// 64 billion triples, or a sort of 16 million pairs: far more than
	// the 200 milliseconds before the cancel on any machine.
	queries := []string{
		"SELECT count(*) FROM big a, big b, big c",
		"SELECT a.x + b.x AS y FROM big a, big b ORDER BY y DESC LIMIT 1",
		"SELECT a.x % 7, max(c.s) FROM big a, big b, big c GROUP BY 1",
		"SELECT pg_sleep(0.01) FROM big",
	}
	for _, q := range queries {
		t.Run("CancelRequest "+q, func(t *testing.T) {
			timer := time.AfterFunc(200*time.Millisecond, func() { _ = pc.CancelRequest(ctx) })
			defer timer.Stop()
			wantCanceledFast(t, pc, q, "canceling statement due to user request")
		})
	}
	mustExec(t, conn, "SET statement_timeout = '200ms'")
	for _, q := range queries {
		t.Run("statement_timeout "+q, func(t *testing.T) {
			wantCanceledFast(t, pc, q, "canceling statement due to statement timeout")
		})
	}
	mustExec(t, conn, "SET statement_timeout = 0")
	if rows := queryText(t, conn, "SELECT count(*) FROM big"); rows[0][0] != "4000" {
		t.Errorf("after the cancels: %v", rows)
	}
}

func wantCanceledFast(t *testing.T, pc *pgconn.PgConn, q, msg string) {
	t.Helper()
	start := time.Now()
	_, err := pc.Exec(context.Background(), q).ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != msg {
		t.Fatalf("%s: got %v, want 57014 %q", q, err, msg)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%s: canceled after %s", q, d)
	}
	if pc.TxStatus() != 'I' {
		t.Errorf("%s: status %c after the cancel", q, pc.TxStatus())
	}
}

package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestDateTimeBinary: pgx sends and reads date, timestamp and timestamptz
// in the binary format through the extended protocol, and compares them
// with parameters.
func TestDateTimeBinary(t *testing.T) {
	ctx := context.Background()
	conn := connectExtended(t, startServer(t, t.TempDir()))
	mustExec(t, conn, `CREATE TABLE ev (id int PRIMARY KEY, at timestamptz, ts timestamp, d date)`)
	at := time.Date(2024, 3, 15, 10, 30, 0, 123456000, time.FixedZone("", 2*3600))
	ts := time.Date(1999, 12, 31, 23, 59, 59, 500000000, time.UTC)
	d := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	if _, err := conn.Exec(ctx, `INSERT INTO ev VALUES ($1, $2, $3, $4)`, 1, at, ts, d); err != nil {
		t.Fatal(err)
	}
	var gotAt, gotTs, gotD time.Time
	var text string
	if err := conn.QueryRow(ctx, `SELECT at, ts, d, at::text FROM ev WHERE at = $1`, at).Scan(&gotAt, &gotTs, &gotD, &text); err != nil {
		t.Fatal(err)
	}
	if !gotAt.Equal(at) || !gotTs.Equal(ts) || !gotD.Equal(d) || text != "2024-03-15 08:30:00.123456+00" {
		t.Fatalf("read back %v %v %v %q", gotAt, gotTs, gotD, text)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ev WHERE d < $1 AND ts < now()`, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("comparison with parameters: %d, %v", n, err)
	}
	// A key's value in an error detail is its text form.
	mustExec(t, conn, `CREATE TABLE days (d date PRIMARY KEY)`)
	mustExec(t, conn, `INSERT INTO days VALUES ('2024-01-01')`)
	_, err := conn.Exec(ctx, `INSERT INTO days VALUES ($1)`, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.Detail != "Key (d)=(2024-01-01) already exists." {
		t.Fatalf("duplicate date key: %v (%+v)", err, pe)
	}
	// A value past the range is refused in binary too (a date of 2^31-2
	// days would overflow the microseconds it is compared as).
	if _, err := conn.Exec(ctx, `INSERT INTO days VALUES ($1::date)`, "294277-01-01"); err == nil {
		t.Fatal("a date past 294276 was accepted")
	}
}

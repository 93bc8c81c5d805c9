package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestSettingsOverTheWire drives the session's settings through a real
// connection: startup parameters, ParameterStatus after SET, COMMIT and
// ROLLBACK, and pgx's Ping.
func TestSettingsOverTheWire(t *testing.T) {
	ts := startRealServer(t)
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, fmt.Sprintf("postgres://alice@%s/db?sslmode=disable&application_name=start&DateStyle=ISO,%%20DMY&options=-c%%20search_path%%3Dfoo", ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if got := conn.ParameterStatus("application_name"); got != "start" {
		t.Errorf("application_name = %q", got)
	}
	if got := conn.ParameterStatus("DateStyle"); got != "ISO, DMY" {
		t.Errorf("DateStyle = %q", got)
	}
	if got := conn.ParameterStatus("is_superuser"); got != "on" {
		t.Errorf("is_superuser = %q", got)
	}
	if rows := showOne(t, conn, "SHOW search_path"); rows != "foo" {
		t.Errorf("search_path from options = %q", rows)
	}
	mustExec(t, conn, "SET application_name = 'changed'")
	if got := conn.ParameterStatus("application_name"); got != "changed" {
		t.Errorf("after SET: application_name = %q", got)
	}
	mustExec(t, conn, "BEGIN; SET TIME ZONE 'Europe/Paris'")
	if got := conn.ParameterStatus("TimeZone"); got != "Europe/Paris" {
		t.Errorf("in transaction: TimeZone = %q", got)
	}
	mustExec(t, conn, "ROLLBACK")
	if got := conn.ParameterStatus("TimeZone"); got != "UTC" {
		t.Errorf("after ROLLBACK: TimeZone = %q", got)
	}
	mustExec(t, conn, "RESET ALL")
	if got := conn.ParameterStatus("application_name"); got != "start" {
		t.Errorf("after RESET ALL: application_name = %q", got)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}

	// An invalid startup value is FATAL, as in PostgreSQL.
	_, err = pgconn.Connect(ctx, fmt.Sprintf("postgres://alice@%s/db?sslmode=disable&DateStyle=nope", ts.addr))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22023" || pe.Severity != "FATAL" {
		t.Errorf("bad DateStyle at startup: %v", err)
	}
}

// TestCancelAndStatementTimeout cancels pg_sleep with a CancelRequest and
// with statement_timeout; each fails with 57014 and its own message, fast,
// and the connection goes on.
func TestCancelAndStatementTimeout(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	ctx := context.Background()

	time.AfterFunc(100*time.Millisecond, func() { _ = conn.CancelRequest(ctx) })
	start := time.Now()
	_, err := conn.Exec(ctx, "SELECT pg_sleep(30)").ReadAll()
	wantQueryCanceled(t, err, "canceling statement due to user request")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if got := showOne(t, conn, "SELECT 1"); got != "1" {
		t.Errorf("after cancel: %q", got)
	}

	mustExec(t, conn, "SET statement_timeout = '100ms'")
	start = time.Now()
	_, err = conn.Exec(ctx, "SELECT pg_sleep(30)").ReadAll()
	wantQueryCanceled(t, err, "canceling statement due to statement timeout")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
	if got := showOne(t, conn, "SHOW statement_timeout"); got != "100ms" {
		t.Errorf("after timeout: %q", got)
	}
	// The timeout ends a failed block's statement; the block stays failed.
	mustExec(t, conn, "BEGIN")
	_, err = conn.Exec(ctx, "SELECT pg_sleep(1)").ReadAll()
	wantQueryCanceled(t, err, "canceling statement due to statement timeout")
	if conn.TxStatus() != 'E' {
		t.Errorf("status after timeout in a block: %c", conn.TxStatus())
	}
	mustExec(t, conn, "ROLLBACK")
	if conn.TxStatus() != 'I' {
		t.Errorf("status after ROLLBACK: %c", conn.TxStatus())
	}
}

func wantQueryCanceled(t *testing.T, err error, msg string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != msg {
		t.Fatalf("got %v, want 57014 %q", err, msg)
	}
}

// showOne runs q and returns the first value of its first row.
func showOne(t *testing.T, conn *pgconn.PgConn, q string) string {
	t.Helper()
	res := mustExec(t, conn, q)
	if len(res) == 0 || len(res[0].Rows) == 0 {
		t.Fatalf("%s: no rows", q)
	}
	return string(res[0].Rows[0][0])
}

// TestSettingsExtendedProtocol runs SET, pg_sleep and statement_timeout
// through Parse/Bind/Execute/Sync: the change is reported at Sync and the
// timeout cancels an Execute.
func TestSettingsExtendedProtocol(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	ctx := context.Background()
	if _, err := conn.ExecParams(ctx, "SET application_name = 'ext'", nil, nil, nil, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if got := conn.ParameterStatus("application_name"); got != "ext" {
		t.Errorf("after extended SET: application_name = %q", got)
	}
	res := conn.ExecParams(ctx, "SELECT pg_sleep($1)", [][]byte{[]byte("0.01")}, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || len(res.Rows[0][0]) != 0 || res.FieldDescriptions[0].DataTypeOID != 2278 {
		t.Fatalf("pg_sleep($1): %+v", res)
	}
	if _, err := conn.ExecParams(ctx, "SET statement_timeout = 100", nil, nil, nil, nil).Close(); err != nil {
		t.Fatal(err)
	}
	_, err := conn.ExecParams(ctx, "SELECT pg_sleep(30)", nil, nil, nil, nil).Close()
	wantQueryCanceled(t, err, "canceling statement due to statement timeout")
	if got := showOne(t, conn, "SHOW statement_timeout"); got != "100ms" {
		t.Errorf("statement_timeout = %q", got)
	}
}

// TestShowExtendedProtocol describes SHOW as PostgreSQL does: the
// parameter's own spelling, three columns for SHOW ALL, 42704 for an
// unknown name.
func TestShowExtendedProtocol(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	ctx := context.Background()
	res := conn.ExecParams(ctx, "SHOW datestyle", nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.FieldDescriptions) != 1 || res.FieldDescriptions[0].Name != "DateStyle" || string(res.Rows[0][0]) != "ISO, MDY" {
		t.Fatalf("SHOW datestyle: %+v", res)
	}
	res = conn.ExecParams(ctx, "SHOW ALL", nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.FieldDescriptions) != 3 || len(res.Rows) < 20 || len(res.Rows[0]) != 3 {
		t.Fatalf("SHOW ALL: %v, %d columns, %d rows", res.Err, len(res.FieldDescriptions), len(res.Rows))
	}
	_, err := conn.Prepare(ctx, "", "SHOW nope", nil)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42704" {
		t.Fatalf("SHOW nope: %v", err)
	}
}

// TestPsqlOnATerminal connects psql the way it runs on a terminal under
// the C locale: libpq turns client_encoding=auto into SQL_ASCII, which a
// UTF8 server accepts without converting.
func TestPsqlOnATerminal(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	ts := startRealServer(t)
	host, port, _ := net.SplitHostPort(ts.addr)
	cmd := exec.Command(psql, "-X", "-h", host, "-p", port, "-U", "alice", "-d", "db", "-At", "-c", "SHOW client_encoding")
	cmd.Env = append(os.Environ(), "PGCLIENTENCODING=auto", "LANG=C", "LC_ALL=C", "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "SQL_ASCII" {
		t.Fatalf("psql: %v: %s", err, out)
	}
}

// TestStatementTimeoutDuringCopyIn times out a COPY FROM STDIN whose client
// sends no data: the server answers 57014 without waiting for it, then
// ignores the rest of the COPY and goes on.
func TestStatementTimeoutDuringCopyIn(t *testing.T) {
	ts := startRealServer(t)
	c, _ := dialTrace(t, ts.addr, "alice")
	c.query("CREATE TABLE waits (a int)")
	c.query("SET statement_timeout = 200")
	start := time.Now()
	c.fe.Send(&pgproto3.Query{String: "COPY waits FROM STDIN"})
	if err := c.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := c.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.CopyInResponse:
			got = append(got, "CopyInResponse")
		case *pgproto3.ErrorResponse:
			got = append(got, m.Code+" "+m.Message)
		case *pgproto3.ReadyForQuery:
			got = append(got, "ReadyForQuery "+string(m.TxStatus))
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	want := []string{"CopyInResponse", "57014 canceling statement due to statement timeout", "ReadyForQuery I"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
	// The client's late data is ignored; the connection goes on.
	c.fe.Send(&pgproto3.CopyData{Data: []byte("1\n")})
	c.fe.Send(&pgproto3.CopyDone{})
	if got := c.query("SELECT count(*) FROM waits"); strings.Join(got, "|") != "RowDescription count:20|DataRow 0|CommandComplete SELECT 1|ReadyForQuery I" {
		t.Errorf("after the timeout: %q", got)
	}
}

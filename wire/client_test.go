package wire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/types"
)

func connString(ts *testServer, extra string) string {
	return fmt.Sprintf("postgres://alice@%s/films?application_name=wiretest&%s", ts.addr, extra)
}

func connectPgx(t *testing.T, ts *testServer, extra string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString(ts, "default_query_exec_mode=simple_protocol&"+extra))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func connectPgconn(t *testing.T, ts *testServer) *pgconn.PgConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, connString(ts, "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// execAll runs sql with pgconn and returns its results.
func execAll(t *testing.T, conn *pgconn.PgConn, sql string) ([]*pgconn.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return conn.Exec(ctx, sql).ReadAll()
}

func TestParameterStatus(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgx(t, ts, "sslmode=disable")
	pc := conn.PgConn()
	want := map[string]string{
		"server_version":                "15.0",
		"server_encoding":               "UTF8",
		"client_encoding":               "UTF8",
		"DateStyle":                     "ISO, MDY",
		"integer_datetimes":             "on",
		"standard_conforming_strings":   "on",
		"TimeZone":                      "UTC",
		"IntervalStyle":                 "postgres",
		"is_superuser":                  "on",
		"session_authorization":         "alice",
		"application_name":              "wiretest",
		"default_transaction_read_only": "off",
		"in_hot_standby":                "off",
	}
	for name, v := range want {
		if got := pc.ParameterStatus(name); got != v {
			t.Errorf("ParameterStatus(%s) = %q, want %q", name, got, v)
		}
	}
	if pc.PID() == 0 || pc.PID() > 1<<31-1 {
		t.Errorf("PID = %d, want a positive int32", pc.PID())
	}
	if len(pc.SecretKey()) != 4 {
		t.Errorf("secret key has %d bytes, want 4", len(pc.SecretKey()))
	}
	if pc.TxStatus() != 'I' {
		t.Errorf("TxStatus = %c, want I", pc.TxStatus())
	}
	info := ts.eng.lastInfo()
	if info.User != "alice" || info.Database != "films" || info.ApplicationName != "wiretest" {
		t.Errorf("startup info = %+v", info)
	}
	if info.RemoteAddr == nil || info.Params["user"] != "alice" {
		t.Errorf("startup info lacks remote address or params: %+v", info)
	}

	var n int32
	if err := conn.QueryRow(context.Background(), "select 42").Scan(&n); err != nil || n != 42 {
		t.Fatalf("select 42 = %d, %v", n, err)
	}
}

func TestDatabaseDefaultsToUser(t *testing.T) {
	ts := startTestServer(t)
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%s user=bob sslmode=disable", portOf(ts.addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if info := ts.eng.lastInfo(); info.Database != "bob" {
		t.Errorf("database = %q, want the user name", info.Database)
	}
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

func TestSessionCreationError(t *testing.T) {
	ts := startTestServer(t)
	_, err := pgconn.Connect(context.Background(), fmt.Sprintf("postgres://alice@%s/nodb?sslmode=disable", ts.addr))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" || pe.Severity != "FATAL" {
		t.Fatalf("connect to nodb: %v, want FATAL 3D000", err)
	}
}

func TestMultipleStatements(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	results, err := execAll(t, conn, "select 1; rows 4; select 2")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("got %d results, want 3", len(results))
	}
	tags := []string{"SELECT 1", "SELECT 4", "SELECT 1"}
	for i, r := range results {
		if r.Err != nil {
			t.Errorf("result %d: %v", i, r.Err)
		}
		if got := r.CommandTag.String(); got != tags[i] {
			t.Errorf("result %d tag = %q, want %q", i, got, tags[i])
		}
	}
	if got := string(results[0].Rows[0][0]); got != "1" {
		t.Errorf("first result = %q", got)
	}
	if got := string(results[2].Rows[0][0]); got != "2" {
		t.Errorf("third result = %q", got)
	}

	fd := results[1].FieldDescriptions
	if len(fd) != 2 {
		t.Fatalf("%d fields, want 2", len(fd))
	}
	wantFD := []pgconn.FieldDescription{
		{Name: "n", TableOID: 16390, TableAttributeNumber: 1, DataTypeOID: types.OIDInt8, DataTypeSize: 8, TypeModifier: -1},
		{Name: "t", TableOID: 16390, TableAttributeNumber: 2, DataTypeOID: types.OIDVarchar, DataTypeSize: -1, TypeModifier: 14},
	}
	for i := range wantFD {
		if fd[i] != wantFD[i] {
			t.Errorf("field %d = %+v, want %+v", i, fd[i], wantFD[i])
		}
	}
	rows := results[1].Rows
	want := [][]string{{"0", "row 0"}, {"1", "row 1"}, {"2", "NULL"}, {"3", "row 3"}}
	for i, row := range rows {
		for j, v := range row {
			got := "NULL"
			if v != nil {
				got = string(v)
			}
			if got != want[i][j] {
				t.Errorf("row %d col %d = %q, want %q", i, j, got, want[i][j])
			}
		}
	}
}

func TestEmptyQuery(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	results, err := execAll(t, conn, "  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || len(results[0].Rows) != 0 || results[0].CommandTag.String() != "" {
		t.Fatalf("empty query results = %+v", results)
	}
}

func TestLargeResultStreams(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	const n = 50000 // several MiB: many flushes at the 64 KiB threshold
	mrr := conn.Exec(context.Background(), "rows "+strconv.Itoa(n))
	defer mrr.Close()
	if !mrr.NextResult() {
		t.Fatalf("no result: %v", mrr.Close())
	}
	rr := mrr.ResultReader()
	i := 0
	for rr.NextRow() {
		if got := string(rr.Values()[0]); got != strconv.Itoa(i) {
			t.Fatalf("row %d: n = %q", i, got)
		}
		i++
	}
	tag, err := rr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if i != n || tag.String() != "SELECT "+strconv.Itoa(n) {
		t.Fatalf("read %d rows, tag %q", i, tag)
	}
}

func TestErrorResponseAndRecovery(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	for _, code := range []string{"42P01", "22P02", "0A000"} {
		results, err := execAll(t, conn, "select 1; error "+code+" boom "+code+"; select 2")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err = %v, want a PgError", code, err)
		}
		want := pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: "boom " + code,
			Detail: "detail of " + code, Hint: "hint of " + code}
		if pe.Severity != want.Severity || pe.SeverityUnlocalized != want.SeverityUnlocalized || pe.Code != want.Code ||
			pe.Message != want.Message || pe.Detail != want.Detail || pe.Hint != want.Hint {
			t.Errorf("error = %+v, want %+v", *pe, want)
		}
		// The statement before the error still produced its result; the
		// one after it did not run.
		if len(results) != 1 || string(results[0].Rows[0][0]) != "1" {
			t.Errorf("%s: results before the error = %d", code, len(results))
		}
		if res, err := execAll(t, conn, "select 7"); err != nil || string(res[0].Rows[0][0]) != "7" {
			t.Fatalf("connection unusable after %s: %v", code, err)
		}
	}
}

func TestTxStatus(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	steps := []struct {
		sql     string
		wantErr string
		status  byte
	}{
		{"select 1", "", 'I'},
		{"begin", "", 'T'},
		{"select 1", "", 'T'},
		{"fail", "22012", 'E'},
		{"rollback", "", 'I'},
		{"begin; select 3", "", 'T'},
		{"commit", "", 'I'},
	}
	for _, s := range steps {
		_, err := execAll(t, conn, s.sql)
		if s.wantErr == "" && err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
		if s.wantErr != "" {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != s.wantErr {
				t.Fatalf("%s: err = %v, want %s", s.sql, err, s.wantErr)
			}
		}
		if got := conn.TxStatus(); got != s.status {
			t.Errorf("after %q TxStatus = %c, want %c", s.sql, got, s.status)
		}
	}
}

func TestPanicBecomesInternalError(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	for i := 0; i < 3; i++ {
		results, err := execAll(t, conn, "rows 5; panic")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "XX000" || pe.Severity != "ERROR" {
			t.Fatalf("panic: err = %v, want ERROR XX000", err)
		}
		if !strings.Contains(pe.Message, "fake session panic") {
			t.Errorf("message = %q", pe.Message)
		}
		if len(results) != 1 || len(results[0].Rows) != 5 {
			t.Errorf("results before the panic lost: %d", len(results))
		}
		if res, err := execAll(t, conn, "select 9"); err != nil || string(res[0].Rows[0][0]) != "9" {
			t.Fatalf("connection unusable after panic: %v", err)
		}
	}
	if n := ts.eng.aborts.Load(); n != 3 {
		t.Errorf("the session's transaction was aborted %d times after 3 panics", n)
	}
	if log := ts.log.String(); !strings.Contains(log, "fake session panic") || !strings.Contains(log, "fakeSession).exec") {
		t.Errorf("panic not logged with its stack:\n%s", log)
	}
	// Another connection is unaffected.
	other := connectPgconn(t, ts)
	if _, err := execAll(t, other, "select 1"); err != nil {
		t.Fatal(err)
	}
}

func TestSessionBugIsInternalError(t *testing.T) {
	ts := startTestServer(t)
	conn := connectPgconn(t, ts)
	for _, q := range []string{"badbatch", "select 1; badrow", "badrow"} {
		_, err := execAll(t, conn, q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "XX000" {
			t.Fatalf("%s: err = %v, want XX000", q, err)
		}
		// No half-written message reached the client: the stream is intact.
		if res, err := execAll(t, conn, "select 8"); err != nil || string(res[0].Rows[0][0]) != "8" {
			t.Fatalf("after %s: %v", q, err)
		}
	}
}

func TestSSLRequestPrefer(t *testing.T) {
	ts := startTestServer(t)
	// sslmode=prefer sends SSLRequest first and goes on in the clear after 'N'.
	conn := connectPgx(t, ts, "sslmode=prefer")
	var n int32
	if err := conn.QueryRow(context.Background(), "select 5").Scan(&n); err != nil || n != 5 {
		t.Fatalf("select 5 = %d, %v", n, err)
	}
	// sslmode=require cannot be satisfied.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgconn.Connect(ctx, connString(ts, "sslmode=require")); err == nil {
		c.Close(ctx)
		t.Fatal("sslmode=require connected without TLS")
	}
}

func TestCancelRequest(t *testing.T) {
	ts := startTestServer(t)
	ts.eng.started = make(chan struct{}, 1)
	conn := connectPgconn(t, ts)
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Exec(context.Background(), "sleep").ReadAll()
		errc <- err
	}()
	<-ts.eng.started
	if err := conn.CancelRequest(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("canceled query: %v, want 57014", err)
	}
	if _, err := execAll(t, conn, "select 1"); err != nil {
		t.Fatal(err)
	}
}

func TestDisconnectFreesSession(t *testing.T) {
	ts := startTestServer(t)
	ctx := context.Background()
	for _, how := range []string{"terminate", "drop"} {
		conn, err := pgconn.Connect(ctx, connString(ts, "sslmode=disable"))
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "session", func() bool { return ts.eng.open.Load() == 1 })
		if how == "terminate" {
			conn.Close(ctx) // sends Terminate
		} else {
			conn.Conn().Close()
		}
		waitFor(t, how+" frees the session", func() bool { return ts.eng.open.Load() == 0 })
	}
}

func TestShutdown(t *testing.T) {
	ts := startTestServer(t)
	ts.eng.started = make(chan struct{}, 1)
	idle := connectPgconn(t, ts)
	busy := connectPgconn(t, ts)
	errc := make(chan error, 1)
	go func() {
		_, err := busy.Exec(context.Background(), "sleep").ReadAll()
		errc <- err
	}()
	<-ts.eng.started

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if ts.eng.open.Load() != 0 {
		t.Errorf("%d sessions still open after Shutdown", ts.eng.open.Load())
	}
	var pe *pgconn.PgError
	if err := <-errc; !errors.As(err, &pe) || pe.Code != "57014" {
		t.Errorf("running query: %v, want 57014", err)
	}
	// The idle connection was told why it was closed.
	_, err := idle.Exec(context.Background(), "select 1").ReadAll()
	if err == nil {
		t.Fatal("query succeeded after Shutdown")
	}
	if !idle.IsClosed() {
		t.Error("idle connection still open")
	}
	if _, err := pgconn.Connect(ctx, connString(ts, "sslmode=disable&connect_timeout=1")); err == nil {
		t.Error("connected after Shutdown")
	}
}

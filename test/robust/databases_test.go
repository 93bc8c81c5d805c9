package robust

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

// Databases are separate: every database name used to open the same
// tables. A database that does not exist is FATAL 3D000 unless the server
// runs under trust on loopback (where the quick start's psql ... anydb
// creates it), tables of one database are not seen from another, and
// DROP DATABASE refuses, or with FORCE ends, the sessions using it.

const dbBootPassword = "bootpw"

func dbDial(t *testing.T, dsn string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	return c, err
}

func dbMustDial(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := dbDial(t, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dbExec(t *testing.T, c *pgx.Conn, sql string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, sql)
	return err
}

func dbMustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if err := dbExec(t, c, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func dbStrings(t *testing.T, c *pgx.Conn, sql string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func dbWantError(t *testing.T, err error, severity, code, message string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || pe.Severity != severity || (message != "" && pe.Message != message) {
		t.Fatalf("got %v, want %s %s %q", err, severity, code, message)
	}
	return pe
}

func TestMissingDatabaseIsFatalUnderSCRAM(t *testing.T) {
	srv := proctest.Start(t, []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=" + dbBootPassword}, "--auth", "scram")
	_, err := dbDial(t, srv.DSN("deeplake", dbBootPassword, "nosuch"))
	dbWantError(t, err, "FATAL", "3D000", `database "nosuch" does not exist`)
	// Nothing was created by the attempt: there are postgres and the
	// bootstrap superuser's own database.
	admin := dbMustDial(t, srv.DSN("deeplake", dbBootPassword, "postgres"))
	if got := dbStrings(t, admin, "SELECT datname::text FROM pg_database ORDER BY 1"); !slices.Equal(got, []string{"deeplake", "postgres"}) {
		t.Fatalf("databases: %v", got)
	}
	// A role without CREATEDB may not make one; the superuser may.
	dbMustExec(t, admin, "CREATE ROLE bob LOGIN PASSWORD 'bob pw'")
	bob := dbMustDial(t, srv.DSN("bob", "bob%20pw", "postgres"))
	dbWantError(t, dbExec(t, bob, "CREATE DATABASE b"), "ERROR", "42501", "permission denied to create database")
	dbMustExec(t, admin, "CREATE DATABASE nosuch OWNER bob")
	c := dbMustDial(t, srv.DSN("bob", "bob%20pw", "nosuch"))
	if got := dbStrings(t, c, "SELECT current_database()::text"); !slices.Equal(got, []string{"nosuch"}) {
		t.Fatalf("current_database() = %v", got)
	}
	if !srv.Alive() {
		t.Fatal("server died")
	}
}

// TestCreatedbDropdb: PostgreSQL's createdb and dropdb tools, which set
// search_path with set_config first, make and drop a database.
func TestCreatedbDropdb(t *testing.T) {
	srv := proctest.Start(t, []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=" + dbBootPassword}, "--auth", "scram")
	env := append(os.Environ(), "PGPASSWORD="+dbBootPassword)
	for _, tool := range []string{"createdb", "dropdb"} {
		cmd := exec.Command(tool, "-h", srv.Host(), "-p", srv.Port(), "-U", "deeplake", "made_by_tool")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, out)
		}
		admin := dbMustDial(t, srv.DSN("deeplake", dbBootPassword, "postgres"))
		got := dbStrings(t, admin, "SELECT datname::text FROM pg_database ORDER BY 1")
		if slices.Contains(got, "made_by_tool") != (tool == "createdb") {
			t.Fatalf("after %s: %v", tool, got)
		}
		admin.Close(context.Background())
	}
}

func TestMissingDatabaseCreatedUnderTrustOnLoopback(t *testing.T) {
	srv := proctest.Start(t, nil) // 127.0.0.1, no --auth: trust
	c := dbMustDial(t, srv.DSN("anyone", "", "anydb"))
	if got := dbStrings(t, c, "SELECT current_database()::text"); !slices.Equal(got, []string{"anydb"}) {
		t.Fatalf("current_database() = %v", got)
	}
	got := dbStrings(t, c, "SELECT datname::text || ' ' || pg_get_userbyid(datdba)::text FROM pg_database ORDER BY 1")
	if !slices.Contains(got, "anydb anyone") || !slices.Contains(got, "postgres anyone") {
		t.Fatalf("pg_database: %v", got)
	}
}

func TestDatabasesHoldSeparateTables(t *testing.T) {
	srv := proctest.Start(t, nil)
	a := dbMustDial(t, srv.DSN("u", "", "postgres"))
	dbMustExec(t, a, "CREATE DATABASE other")
	b := dbMustDial(t, srv.DSN("u", "", "other"))
	dbMustExec(t, a, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	dbMustExec(t, b, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	dbMustExec(t, a, "INSERT INTO t VALUES (1, 'postgres')")
	dbMustExec(t, b, "INSERT INTO t VALUES (1, 'other'), (2, 'other')")
	dbMustExec(t, a, "CREATE TABLE secret (x text)")
	if got := dbStrings(t, a, "SELECT v FROM t ORDER BY id"); !slices.Equal(got, []string{"postgres"}) {
		t.Fatalf("t in postgres: %v", got)
	}
	if got := dbStrings(t, b, "SELECT v FROM t ORDER BY id"); !slices.Equal(got, []string{"other", "other"}) {
		t.Fatalf("t in other: %v", got)
	}
	dbWantError(t, dbExec(t, b, "SELECT * FROM secret"), "ERROR", "42P01", `relation "secret" does not exist`)
	for _, q := range []string{
		"SELECT relname::text FROM pg_class WHERE relname = 'secret'",
		"SELECT table_name::text FROM information_schema.tables WHERE table_name = 'secret'",
		"SELECT tablename::text FROM pg_tables WHERE tablename = 'secret'",
	} {
		if got := dbStrings(t, b, q); len(got) != 0 {
			t.Fatalf("%s from another database: %v", q, got)
		}
		if got := dbStrings(t, a, q); len(got) != 1 {
			t.Fatalf("%s from its database: %v", q, got)
		}
	}
}

func TestDropDatabaseWithSessions(t *testing.T) {
	srv := proctest.Start(t, nil)
	a := dbMustDial(t, srv.DSN("u", "", "postgres"))
	dbMustExec(t, a, "CREATE DATABASE busy")
	b := dbMustDial(t, srv.DSN("u", "", "busy"))
	dbMustExec(t, b, "CREATE TABLE t (x int)")
	dbWantError(t, dbExec(t, a, "DROP DATABASE postgres"), "ERROR", "55006", "cannot drop the currently open database")
	dbWantError(t, dbExec(t, a, "BEGIN; DROP DATABASE busy"), "ERROR", "25001", "DROP DATABASE cannot run inside a transaction block")
	dbMustExec(t, a, "ROLLBACK")
	pe := dbWantError(t, dbExec(t, a, "DROP DATABASE busy"), "ERROR", "55006", `database "busy" is being accessed by other users`)
	if pe.Detail != "There is 1 other session using the database." {
		t.Fatalf("detail %q", pe.Detail)
	}
	dbMustExec(t, b, "INSERT INTO t VALUES (1)") // untouched
	dbMustExec(t, a, "DROP DATABASE busy WITH (FORCE)")
	err := dbExec(t, b, "SELECT 1")
	if err == nil {
		t.Fatal("a session of the dropped database goes on")
	}
	var pe2 *pgconn.PgError
	if errors.As(err, &pe2) && pe2.Code != "57P01" {
		t.Fatalf("terminated session got %v", err)
	}
	again, err := dbDial(t, srv.DSN("u", "", "busy"))
	if err != nil {
		t.Fatalf("trust on loopback makes it again: %v", err)
	}
	dbWantError(t, dbExec(t, again, "SELECT * FROM t"), "ERROR", "42P01", `relation "t" does not exist`)
	if got := dbStrings(t, a, "SELECT count(*)::text FROM pg_database WHERE datname = 'busy'"); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("busy in pg_database: %v", got)
	}
	if !srv.Alive() {
		t.Fatal("server died")
	}
}

package robust

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

// TestPrivilegesNonSuperuser replays the probe: under password
// authentication a role that is not a superuser could SELECT, INSERT
// into and DROP the superuser's table. It gets 42501 until granted, and
// grants survive a restart.
func TestPrivilegesNonSuperuser(t *testing.T) {
	env := []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=rootpw"}
	srv := proctest.Start(t, env, "--auth", "scram")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	connect := func(user, pw string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, srv.DSN(user, pw, "postgres"))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	exec := func(c *pgx.Conn, q string) error {
		_, err := c.Exec(ctx, q)
		return err
	}
	must := func(c *pgx.Conn, q string) {
		t.Helper()
		if err := exec(c, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	denied := func(c *pgx.Conn, q string) {
		t.Helper()
		var pe *pgconn.PgError
		if err := exec(c, q); !errors.As(err, &pe) || pe.Code != "42501" {
			t.Fatalf("%s: %v, want 42501", q, err)
		}
	}
	root := connect("deeplake", "rootpw")
	must(root, "CREATE TABLE secrets (id int, v text)")
	must(root, "INSERT INTO secrets VALUES (1, 'x')")
	must(root, "CREATE ROLE mallory LOGIN PASSWORD 'mpw'")
	mal := connect("mallory", "mpw")
	denied(mal, "SELECT * FROM secrets")
	denied(mal, "INSERT INTO secrets VALUES (2, 'y')")
	denied(mal, "DROP TABLE secrets")
	denied(mal, "COPY secrets TO STDOUT")
	denied(mal, "GRANT SELECT ON secrets TO mallory")
	denied(mal, "CREATE TABLE mine (a int)") // CREATE on schema public, PostgreSQL 15
	var n int
	if err := mal.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'secrets'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("information_schema.tables shows secrets to mallory: %d, %v", n, err)
	}

	must(root, "GRANT SELECT, INSERT ON secrets TO mallory")
	must(mal, "INSERT INTO secrets VALUES (2, 'y')")
	if err := mal.QueryRow(ctx, "SELECT count(*) FROM secrets").Scan(&n); err != nil || n != 2 {
		t.Fatalf("SELECT after GRANT: %d, %v", n, err)
	}
	denied(mal, "DROP TABLE secrets")
	denied(mal, "DELETE FROM secrets")

	// The grants are in the catalog: they hold after a restart.
	dir := srv.DataDir
	root.Close(ctx)
	mal.Close(ctx)
	srv2 := restart(t, srv, env, dir)
	mal2, err := pgx.Connect(ctx, srv2.DSN("mallory", "mpw", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer mal2.Close(context.Background())
	if err := mal2.QueryRow(ctx, "SELECT count(*) FROM secrets").Scan(&n); err != nil || n != 2 {
		t.Fatalf("SELECT after restart: %d, %v", n, err)
	}
	var pe *pgconn.PgError
	if _, err := mal2.Exec(ctx, "DROP TABLE secrets"); !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("DROP after restart: %v", err)
	}
	if !srv2.Alive() {
		t.Fatal("server died")
	}
}

// restart stops srv and starts the binary again on its data directory.
func restart(t *testing.T, srv *proctest.Server, env []string, dir string) *proctest.Server {
	t.Helper()
	if err := syscall.Kill(srv.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !srv.WaitExit(30 * time.Second) {
		t.Fatal("server did not stop")
	}
	return proctest.Start(t, env, "--auth", "scram", "--data-dir", dir)
}

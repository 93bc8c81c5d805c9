// Package psqlcompat runs psql's meta-commands (\dt, \d table, \l, ...)
// against deeplaked and against a real PostgreSQL 15 holding the same
// tables, and compares what psql prints. psql builds those listings from
// catalog queries (pg_class, pg_attribute, pg_index, pg_roles, ...), so a
// match means deeplaked's catalogs and catalog functions answer them as
// PostgreSQL does.
package psqlcompat

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/internal/pgtest"
	"github.com/deeplaked/deeplaked/server"
)

// setup creates the same tables on both servers.
var setup = []string{
	"CREATE TABLE items (id int PRIMARY KEY, label text NOT NULL, score float8 DEFAULT 1.5, tag varchar(12), n bigint)",
	"CREATE TABLE events (at bigint, kind smallint, payload jsonb, flag boolean, body bytea, ratio real)",
	"CREATE TABLE pairs (a int, b text, PRIMARY KEY (a, b))",
	"INSERT INTO items VALUES (1, 'one', 2.5, 'x', 10)",
	"CREATE TABLE counters (id serial PRIMARY KEY, hits bigserial, note text DEFAULT 'none')",
}

// commands are the meta-commands compared; each runs in its own psql.
var commands = []string{
	`\dt`,
	`\d`,
	`\di`,
	`\dn`,
	`\du`,
	`\l postgres`,
	`\d items`,
	`\d events`,
	`\d pairs`,
	`\d items_pkey`,
	`\d pairs_pkey`,
	`\dt item*`,
	`\d nosuch`,
	`\dv`,
	`\ds`,
	`\df`,
	`\dT`,
	`\dp`,
	`\d counters`,
	`\d counters_id_seq`,
	`\d+ items`,
	`\d+ counters`,
	`\x on` + "\n" + `\dt`,
	`\x on` + "\n" + `\d items`,
}

func TestPsqlMetaCommandsMatchPostgres15(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	pgPort := startPostgres15(t)
	dlHost, dlPort := startDeeplaked(t)

	run := func(host, port, input string) string {
		t.Helper()
		cmd := exec.Command(psql, "-X", "-q", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=0")
		cmd.Stdin = strings.NewReader(input + "\n")
		cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGTZ=UTC", "PAGER=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("psql %s:%s: %v", host, port, err)
		}
		return string(out)
	}
	for _, q := range setup {
		for _, target := range [][2]string{{"127.0.0.1", pgPort}, {dlHost, dlPort}} {
			if out := run(target[0], target[1], q+";"); strings.Contains(out, "ERROR") {
				t.Fatalf("setup %q on %s: %s", q, target[1], out)
			}
		}
	}
	for _, c := range commands {
		want := run("127.0.0.1", pgPort, c)
		got := run(dlHost, dlPort, c)
		if got != want {
			t.Errorf("%s:\n--- deeplaked\n%s--- PostgreSQL 15\n%s", c, got, want)
		}
		if c == `\d items` && !strings.Contains(got, `"items_pkey" PRIMARY KEY, btree (id)`) {
			t.Errorf("%s printed no index:\n%s", c, got)
		}
	}
}

// startDeeplaked starts an in-memory deeplaked and returns its host and port.
func startDeeplaked(t *testing.T) (string, string) {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Options{
		Listen:   "127.0.0.1:0",
		InMemory: true,
		DataDir:  t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// startPostgres15 starts a throwaway PostgreSQL 15 server
// (internal/pgtest) and returns its port.
func startPostgres15(t *testing.T) string { return pgtest.Start15(t) }

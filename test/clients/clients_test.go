// Package clients_test runs real PostgreSQL clients against a deeplaked
// process: psql, pgx, psycopg 3, psycopg2, SQLAlchemy with pandas,
// node-postgres and the PostgreSQL JDBC driver. Each client goes through
// the same steps (see steps) with its own tables, so the clients run in
// parallel. scripts/test.sh installs the clients; a missing one fails the
// test rather than skipping it.
//
// CLIENTS_BIN names a deeplaked binary to run instead of building
// cmd/deeplaked. CLIENTS_DSN=postgres://user@host:port/db runs the same
// clients against another server instead, a PostgreSQL 15 with a
// pgvector-compatible `vector` type, to check the tests themselves; there
// every step must pass, knownMissing or not.
package clients_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// steps are what every client does, in this order. A client's script
// prints one line per step: "ok <step>" or "FAIL <step>: <why>".
var steps = []string{
	"connect",  // connect and run a query
	"create",   // create the client's tables (a vector and tensor columns among them)
	"insert",   // insert rows with parameters
	"select",   // read them back, in binary format where the client can
	"cursor",   // read 1000+ rows in pieces: row-limited Execute or DECLARE/FETCH
	"copy_in",  // COPY ... FROM STDIN, then check the rows
	"copy_out", // COPY ... TO STDOUT, checked byte for byte or value for value
	"catalog",  // list the client's table and its columns from the catalog
	"sqlstate", // errors carry PostgreSQL's SQLSTATE; the connection stays usable
	"cancel",   // cancel a running query (57014); the connection stays usable
}

// target is the server the clients talk to.
type target struct {
	host, port, user, database string
	// postgres is set for a real PostgreSQL (CLIENTS_DSN); the scripts then
	// declare tensors as PostgreSQL arrays.
	postgres bool
}

func (tg target) env() []string {
	kind := "deeplaked"
	if tg.postgres {
		kind = "postgres"
	}
	return []string{
		"PGHOST=" + tg.host, "PGPORT=" + tg.port, "PGUSER=" + tg.user, "PGDATABASE=" + tg.database,
		"PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10", "CLIENT_TARGET=" + kind,
	}
}

func (tg target) dsn() string {
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", tg.host, tg.port, tg.user, tg.database)
}

// tensorTypes are the column types of the tensor columns: deeplaked's
// tensors, or the arrays PostgreSQL clients see them as.
func (tg target) tensorTypes() (weights, pixels string) {
	if tg.postgres {
		return "real[]", "smallint[]"
	}
	return "float32[3]", "uint8[2][2]"
}

func TestClients(t *testing.T) {
	tg := startTarget(t)
	clients := []struct {
		name string
		run  func(t *testing.T, tg target) map[string]string
	}{
		{"psql", runPsql},
		{"pgx", runPgx},
		{"psycopg3", runPsycopg3},
		{"psycopg2", runPsycopg2},
		{"sqlalchemy", runSQLAlchemy},
		{"node-postgres", runNode},
		{"jdbc", runJDBC},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkSteps(t, tg, c.name, c.run(t, tg))
		})
	}
}

// checkSteps compares a client's step results (step → "" for success or
// the failure message) with the steps and knownMissing.
func checkSteps(t *testing.T, tg target, client string, results map[string]string) {
	t.Helper()
	for _, step := range steps {
		failure, ran := results[step]
		reason, known := knownMissing[client+"/"+step]
		if tg.postgres {
			known = false
		}
		switch {
		case !ran:
			t.Errorf("%s: step %s did not run", client, step)
		case failure == "" && known:
			t.Errorf("%s: step %s passes now; remove it from knownMissing (%s)", client, step, reason)
		case failure == "":
			t.Logf("%s: %s ok", client, step)
		case known:
			t.Logf("%s: %s fails, known missing (%s): %s", client, step, reason, failure)
		default:
			t.Errorf("%s: step %s failed: %s", client, step, failure)
		}
	}
	for step := range results {
		if !contains(steps, step) {
			t.Errorf("%s: unknown step %q in the client's output", client, step)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runSteps runs Go-side steps in order, turning each one's error (or
// panic, from a failed type assertion or the like) into its result.
func runSteps(t *testing.T, fns map[string]func() error) map[string]string {
	t.Helper()
	results := make(map[string]string)
	for _, step := range steps {
		fn, ok := fns[step]
		if !ok {
			continue
		}
		results[step] = func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprintf("panic: %v", r)
				}
			}()
			if err := fn(); err != nil {
				if msg = oneLine(err.Error()); msg == "" {
					msg = "failed"
				}
			}
			return msg
		}()
	}
	return results
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " | ")), " ")
}

// runScript runs a client script (its command line in args) and parses its
// "ok <step>" and "FAIL <step>: <why>" lines. Exit status 0 means every
// step passed and 1 that some failed; anything else is a crash.
func runScript(t *testing.T, tg target, dir string, timeout time.Duration, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), tg.env()...)
	out, err := cmd.CombinedOutput()
	results := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ok "):
			results[strings.TrimSpace(line[3:])] = ""
		case strings.HasPrefix(line, "FAIL "):
			step, msg, _ := strings.Cut(line[5:], ": ")
			if msg == "" {
				msg = "failed"
			}
			results[strings.TrimSpace(step)] = msg
		}
	}
	exitCode := 0
	if err != nil {
		exitCode = -1
		if ee, ok := err.(*exec.ExitError); ok {
			exitCode = ee.ExitCode()
		}
	}
	failed := false
	for _, msg := range results {
		failed = failed || msg != ""
	}
	if ctx.Err() != nil || exitCode > 1 || exitCode < 0 || (exitCode == 1) != failed {
		t.Errorf("%s: exit code %d (%v), output:\n%s", strings.Join(args, " "), exitCode, err, out)
	} else if testing.Verbose() {
		t.Logf("%s output:\n%s", filepath.Base(args[len(args)-1]), out)
	}
	return results
}

// needTool fails the test when a client program is missing; the test
// command (scripts/test.sh) installs them all.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install %s (scripts/test.sh does)", name, pkg)
	}
	return path
}

// systemPython is Debian's Python, where python3-psycopg and the others
// are installed; a python3 earlier on PATH (pyenv, a virtualenv) would not
// see them.
const systemPython = "/usr/bin/python3"

// needPython fails the test when systemPython lacks a module.
func needPython(t *testing.T, module, pkg string) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Fatalf("%s not found: install python3 (scripts/test.sh does)", systemPython)
	}
	if out, err := exec.Command(systemPython, "-c", "import "+module).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %s: install %s (scripts/test.sh does): %v\n%s", systemPython, module, pkg, err, out)
	}
}

func runPsycopg3(t *testing.T, tg target) map[string]string {
	needPython(t, "psycopg", "python3-psycopg")
	return runScript(t, tg, "python", 2*time.Minute, systemPython, "psycopg3_client.py")
}

func runPsycopg2(t *testing.T, tg target) map[string]string {
	needPython(t, "psycopg2", "python3-psycopg2")
	return runScript(t, tg, "python", 2*time.Minute, systemPython, "psycopg2_client.py")
}

func runSQLAlchemy(t *testing.T, tg target) map[string]string {
	needPython(t, "sqlalchemy", "python3-sqlalchemy")
	needPython(t, "pandas", "python3-pandas")
	needPython(t, "psycopg2", "python3-psycopg2")
	return runScript(t, tg, "python", 2*time.Minute, systemPython, "sqlalchemy_client.py")
}

func runNode(t *testing.T, tg target) map[string]string {
	node := needTool(t, "node", "nodejs")
	for _, mod := range []string{"pg", "pg-copy-streams", "pg-cursor"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", mod, "package.json")); err != nil {
			t.Fatalf("node/node_modules/%s is missing: run npm ci in test/clients/node (scripts/test.sh does)", mod)
		}
	}
	return runScript(t, tg, "node", 2*time.Minute, node, "client.js")
}

// jdbcJar is Debian's libpostgresql-jdbc-java.
const jdbcJar = "/usr/share/java/postgresql.jar"

func runJDBC(t *testing.T, tg target) map[string]string {
	javac := needTool(t, "javac", "a JDK (default-jdk-headless)")
	java := needTool(t, "java", "a JDK (default-jdk-headless)")
	if _, err := os.Stat(jdbcJar); err != nil {
		t.Fatalf("%s not found: install libpostgresql-jdbc-java (scripts/test.sh does)", jdbcJar)
	}
	classes := t.TempDir()
	src, err := filepath.Abs(filepath.Join("jdbc", "ClientTest.java"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(javac, "-d", classes, "-cp", jdbcJar, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return runScript(t, tg, "jdbc", 2*time.Minute, java, "-cp", classes+string(os.PathListSeparator)+jdbcJar, "ClientTest")
}

// startTarget starts deeplaked on a free port with a fresh data directory,
// or returns the server CLIENTS_DSN names.
func startTarget(t *testing.T) target {
	t.Helper()
	if dsn := os.Getenv("CLIENTS_DSN"); dsn != "" {
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("CLIENTS_DSN: %v", err)
		}
		return target{host: cfg.Host, port: strconv.Itoa(int(cfg.Port)), user: cfg.User, database: cfg.Database, postgres: true}
	}
	bin := os.Getenv("CLIENTS_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "deeplaked")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/deeplaked/deeplaked/cmd/deeplaked").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	cmd := exec.Command(bin, "--listen", addr.String(), "--data-dir", filepath.Join(t.TempDir(), "data"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var log []string
		found := false
		for !found && sc.Scan() {
			log = append(log, sc.Text())
			found = strings.Contains(sc.Text(), "listening")
		}
		if !found {
			t.Logf("deeplaked:\n%s", strings.Join(log, "\n"))
		}
		listening <- found
		// Keep draining so the server never blocks on a full pipe.
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("deeplaked exited before listening")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("deeplaked did not log that it listens")
	}
	return target{host: "127.0.0.1", port: strconv.Itoa(addr.Port), user: "clients", database: "clients"}
}

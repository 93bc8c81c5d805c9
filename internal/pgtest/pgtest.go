// Package pgtest starts a throwaway PostgreSQL 15 server for tests that
// compare deeplaked with PostgreSQL. scripts/test.sh installs Debian's
// postgresql-15; a test fails, not skips, without it.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Bin is where Debian and Ubuntu install PostgreSQL 15.
const Bin = "/usr/lib/postgresql/15/bin"

// Start15 starts a PostgreSQL 15 server with trust authentication on a
// free 127.0.0.1 port (as the postgres user when the test runs as root,
// since PostgreSQL refuses to run as root), stopped when the test ends,
// and returns the port. Its superuser is postgres.
func Start15(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(Bin, "initdb")); err != nil {
		t.Fatalf("PostgreSQL 15 is not installed (%s/initdb); ./scripts/test.sh installs it (postgresql-15)", Bin)
	}
	dir, err := os.MkdirTemp("", "pg15-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	command := func(name string, args ...string) *exec.Cmd {
		path := filepath.Join(Bin, name)
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
		}
		return exec.Command(path, args...)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	if out, err := command("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() { _ = command("pg_ctl", "-D", data, "-m", "immediate", "stop").Run() })
	return port
}

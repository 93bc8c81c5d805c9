package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// TestUnixSocket serves PostgreSQL's Unix socket, .s.PGSQL.<port> in
// Options.UnixSocketDir: queries and tensor streams (frames large enough
// for the vectored write) give over it what they give over TCP; psql
// reaches it with -h DIR; a socket file left by a dead server is
// replaced, and the socket goes away with the server.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	// A stale socket where the server's will go: a listener closed
	// without removing its file.
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	path := filepath.Join(dir, ".s.PGSQL."+port)
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket file is gone: %v", err)
	}

	srv := startOpen(t, server.Options{Listen: addr, UnixSocketDir: dir, FlushRows: 500})
	if srv.UnixSocket() != path {
		t.Fatalf("socket %q, want %q", srv.UnixSocket(), path)
	}
	// A server on another port shares the directory.
	other := startWith(t, server.Options{Listen: "127.0.0.1:0", UnixSocketDir: dir})
	if other.UnixSocket() == path {
		t.Fatal("two servers on one socket")
	}
	unixDSN := fmt.Sprintf("host=%s port=%s user=u dbname=postgres sslmode=disable", dir, port)
	loadImages(t, unixDSN)

	tcpDSN := connString(t, srv, "u", "", "")
	for _, opts := range []stream.Options{{BatchSize: 100}, {BatchSize: 100, Shuffle: true, Seed: 5}} {
		var got [2][]int32
		for k, dsn := range []string{unixDSN, tcpDSN} {
			got[k] = streamImageIDs(t, dsn, opts)
		}
		if len(got[0]) != 2000 || !slices.Equal(got[0], got[1]) {
			t.Fatalf("%+v: %d rows over the Unix socket, %d over TCP, or another order", opts, len(got[0]), len(got[1]))
		}
	}

	if psql, err := exec.LookPath("psql"); err == nil {
		out, err := exec.Command(psql, "-h", dir, "-p", port, "-U", "u", "-d", "postgres", "-XAtc", "SELECT count(*) FROM imgs").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "2000" {
			t.Fatalf("psql -h %s: %v: %s", dir, err, out)
		}
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived the server: %v", err)
	}
}

// TestUnixSocketInUse refuses a second server on a socket that answers.
func TestUnixSocketInUse(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	path := filepath.Join(dir, ".s.PGSQL."+port)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = server.Start(context.Background(), server.Options{Listen: addr, DataDir: t.TempDir(), UnixSocketDir: dir})
	if err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("started on a live socket: %v", err)
	}
}

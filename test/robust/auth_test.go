package robust

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

const (
	suPassword  = "su-pw"
	bobPassword = "bob-pw"
	// declared is what the hostile connections declare a message holds.
	declared = 256 << 20
	// rssBudget bounds the server's peak resident set under them.
	rssBudget = 300 << 20
)

// startSCRAM runs the binary under SCRAM with the bootstrap superuser
// "deeplake" (password suPassword) and a role bob that is not a
// superuser.
func startSCRAM(t *testing.T, args ...string) *proctest.Server {
	t.Helper()
	srv := proctest.Start(t, []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=" + suPassword}, append([]string{"--auth", "scram"}, args...)...)
	su := connect(t, srv, "deeplake", suPassword)
	if _, err := su.Exec(context.Background(), "CREATE ROLE bob LOGIN PASSWORD '"+bobPassword+"'"); err != nil {
		t.Fatal(err)
	}
	su.Close(context.Background())
	return srv
}

// login connects as user with SCRAM; the error is the server's.
func login(srv *proctest.Server, user, password string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return pgx.Connect(ctx, srv.DSN(user, password, "postgres"))
}

func connect(t *testing.T, srv *proctest.Server, user, password string) *pgx.Conn {
	t.Helper()
	conn, err := login(srv, user, password)
	if err != nil {
		t.Fatalf("%s logs in: %v", user, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// selectOne checks that conn answers a query.
func selectOne(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1: %d, %v", n, err)
	}
}

// TestUnauthenticatedFlood: 200 silent sockets, 60 connections that
// declare a 256 MiB message in the middle of SCRAM, and 60 logged-in
// sessions (a role that is not a superuser and the superuser) that each
// declare a 256 MiB query and send 1 KB of it, in waves that reconnect as
// an attacker would: the server stays under 300 MB and the superuser
// still logs in with SCRAM.
func TestUnauthenticatedFlood(t *testing.T) {
	srv := startSCRAM(t, "--authentication-timeout", "60s")
	for range 200 {
		s, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
	}
	selectOne(t, connect(t, srv, "deeplake", suPassword))

	// Before authentication: refused on the header.
	for range waves {
		wave(t, func(int) (net.Conn, error) {
			rc := dialRaw(t, srv.Addr, 20*time.Second)
			return rc.nc, preAuthBigMessage(rc)
		})
	}
	selectOne(t, connect(t, srv, "deeplake", suPassword))

	// After authentication: the declared size is not allocated.
	for range waves {
		wave(t, func(i int) (net.Conn, error) {
			if i%2 == 0 {
				return postAuthBigMessage(srv, "bob", bobPassword)
			}
			return postAuthBigMessage(srv, "deeplake", suPassword)
		})
	}
	selectOne(t, connect(t, srv, "deeplake", suPassword))

	_, peak := srv.RSS(t)
	t.Logf("server peak RSS %d MB", peak>>20)
	if peak > rssBudget {
		t.Fatalf("server peak RSS %d MB, want under %d MB", peak>>20, rssBudget>>20)
	}
	if !srv.Alive() {
		t.Fatal("server died")
	}
}

// waves of perWave hostile connections make the 60 of each kind.
const waves, perWave = 3, 20

// wave runs perWave connections at once with open, lets the server read
// what they sent, and closes them.
func wave(t *testing.T, open func(i int) (net.Conn, error)) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		conns = make([]net.Conn, perWave)
		errs  = make([]error, perWave)
	)
	for i := range perWave {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = open(i)
		}()
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// postAuthBigMessage logs in as user and sends the header of a query
// that declares 256 MiB, and 1 KB of it; it returns the socket.
func postAuthBigMessage(srv *proctest.Server, user, password string) (net.Conn, error) {
	conn, err := login(srv, user, password)
	if err != nil {
		return nil, fmt.Errorf("%s logs in: %w", user, err)
	}
	hc, err := conn.PgConn().Hijack()
	if err != nil {
		return nil, err
	}
	_, err = hc.Conn.Write(append(declare('Q', declared), make([]byte, 1024)...))
	return hc.Conn, err
}

// preAuthBigMessage starts SCRAM as the superuser and answers with a
// message that declares 256 MiB and holds 1 KB; the server must refuse it
// at once.
func preAuthBigMessage(rc *rawClient) error {
	var body []byte
	for _, s := range []string{"user", "deeplake", "database", "postgres"} {
		body = append(append(body, s...), 0)
	}
	pkt := append(be32(int32(9+len(body))), be32(3<<16)...)
	if _, err := rc.nc.Write(append(append(pkt, body...), 0)); err != nil {
		return err
	}
	m, err := rc.fe.Receive()
	if err != nil {
		return err
	}
	if _, ok := m.(*pgproto3.AuthenticationSASL); !ok {
		return fmt.Errorf("got %#v, want AuthenticationSASL", m)
	}
	if _, err := rc.nc.Write(append(declare('p', declared), make([]byte, 1024)...)); err != nil {
		return err
	}
	m, err = rc.fe.Receive()
	if err != nil {
		return fmt.Errorf("want FATAL 08P01, got %v", err)
	}
	if er, ok := m.(*pgproto3.ErrorResponse); !ok || er.Code != "08P01" || er.Message != "invalid message length" {
		return fmt.Errorf("got %#v, want FATAL 08P01 invalid message length", m)
	}
	return nil
}

// TestAuthenticationTimeout: sockets that never finish startup, or stop
// in the middle of SCRAM, are closed after authentication_timeout and do
// not keep anyone out meanwhile.
func TestAuthenticationTimeout(t *testing.T) {
	srv := startSCRAM(t, "--authentication-timeout", "1s", "--max-connections", "10")
	var silent, stalled []*rawClient
	for range 100 {
		silent = append(silent, dialRaw(t, srv.Addr, 10*time.Second))
	}
	for range 20 {
		rc := dialRaw(t, srv.Addr, 10*time.Second)
		rc.startup("deeplake")
		if _, ok := rc.receive().(*pgproto3.AuthenticationSASL); !ok {
			t.Fatal("want AuthenticationSASL")
		}
		stalled = append(stalled, rc)
	}
	selectOne(t, connect(t, srv, "deeplake", suPassword))
	selectOne(t, connect(t, srv, "bob", bobPassword))
	start := time.Now()
	for i, rc := range append(silent, stalled...) {
		if !rc.closed() {
			t.Fatalf("socket %d not closed %s after connecting", i, time.Since(start))
		}
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("sockets closed after %s", d)
	}
	var to string
	conn := connect(t, srv, "bob", bobPassword)
	if err := conn.QueryRow(context.Background(), "SHOW authentication_timeout").Scan(&to); err != nil || to != "1s" {
		t.Errorf("SHOW authentication_timeout = %q, %v", to, err)
	}
}

// TestSuperuserReservedConnections: the last superuser_reserved_connections
// slots of max_connections are for superusers.
func TestSuperuserReservedConnections(t *testing.T) {
	srv := startSCRAM(t, "--max-connections", "4", "--superuser-reserved-connections", "2")
	for range 2 {
		connect(t, srv, "bob", bobPassword)
	}
	_, err := login(srv, "bob", bobPassword)
	wantFatal(t, err, "53300", "remaining connection slots are reserved for roles with the SUPERUSER attribute")
	su := connect(t, srv, "deeplake", suPassword)
	connect(t, srv, "deeplake", suPassword)
	_, err = login(srv, "deeplake", suPassword)
	wantFatal(t, err, "53300", "sorry, too many clients already")
	var n string
	if err := su.QueryRow(context.Background(), "SHOW superuser_reserved_connections").Scan(&n); err != nil || n != "2" {
		t.Errorf("SHOW superuser_reserved_connections = %q, %v", n, err)
	}
}

func wantFatal(t *testing.T, err error, code, msg string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg {
		t.Fatalf("got %v, want %s %s", err, code, msg)
	}
}

// TestDataDirModes: a fresh data directory after some writes holds only
// files of mode 0600 in directories of mode 0700, and the server refuses
// to start once others can read it.
func TestDataDirModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := proctest.Start(t, []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=" + suPassword}, "--data-dir", dir)
	conn := connect(t, srv, "deeplake", "")
	for _, q := range []string{
		"CREATE TABLE t (a int PRIMARY KEY, b text)",
		"INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 20000) g",
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for countFiles(t, filepath.Join(dir, "objects")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no chunk object written")
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn.Close(context.Background())
	stop(t, srv)

	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, proctest.Binary(t), "--listen", proctest.FreeAddr(t), "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "has invalid permissions") || !strings.Contains(string(out), "chmod 0700") {
		t.Fatalf("started on a data directory of mode 0755: %v\n%s", err, out)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// stop ends the server with SIGTERM and waits for it.
func stop(t *testing.T, srv *proctest.Server) {
	t.Helper()
	if err := syscall.Kill(srv.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !srv.WaitExit(30 * time.Second) {
		t.Fatal("server did not stop")
	}
}

// serverFirst starts SCRAM for user and returns the salt and iteration
// count of the server-first message.
func serverFirst(t *testing.T, srv *proctest.Server, user string) string {
	t.Helper()
	rc := dialRaw(t, srv.Addr, 10*time.Second)
	rc.startup(user)
	if _, ok := rc.receive().(*pgproto3.AuthenticationSASL); !ok {
		t.Fatal("want AuthenticationSASL")
	}
	rc.write(frame('p', cstr("SCRAM-SHA-256"), be32(int32(len("n,,n=,r=abc"))), []byte("n,,n=,r=abc")))
	m, ok := rc.receive().(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("got %#v, want AuthenticationSASLContinue", m)
	}
	var salt, iter string
	for _, f := range strings.Split(string(m.Data), ",") {
		switch {
		case strings.HasPrefix(f, "s="):
			salt = f[2:]
		case strings.HasPrefix(f, "i="):
			iter = f[2:]
		}
	}
	if b, err := base64.StdEncoding.DecodeString(salt); err != nil || len(b) == 0 || iter == "" {
		t.Fatalf("server-first-message %q", m.Data)
	}
	return "s=" + salt + ",i=" + iter
}

// TestUnknownRoleSaltStable: an unknown role's made-up salt and iteration
// count are the same before and after a restart, as a real role's are, so
// a client cannot tell them apart by restarting the server.
func TestUnknownRoleSaltStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startSCRAM(t, "--data-dir", dir)
	ghost, real := serverFirst(t, srv, "ghost"), serverFirst(t, srv, "deeplake")
	if again := serverFirst(t, srv, "ghost"); again != ghost {
		t.Fatalf("salt changed between connections: %s, %s", ghost, again)
	}
	stop(t, srv)
	srv = proctest.Start(t, nil, "--auth", "scram", "--data-dir", dir)
	if got := serverFirst(t, srv, "deeplake"); got != real {
		t.Fatalf("real role: %s before the restart, %s after", real, got)
	}
	if got := serverFirst(t, srv, "ghost"); got != ghost {
		t.Fatalf("unknown role: %s before the restart, %s after", ghost, got)
	}
	if got := serverFirst(t, srv, "ghost2"); got == ghost {
		t.Fatal("two unknown roles share a salt")
	}
}

// TestCleartextPasswordNUL: under password authentication a password with
// a NUL in it does not pass for its prefix.
func TestCleartextPasswordNUL(t *testing.T) {
	srv := proctest.Start(t, []string{"DEEPLAKED_BOOTSTRAP_PASSWORD=secret"}, "--auth", "password")
	for _, c := range []struct {
		pw   string
		code string
	}{{"secret\x00extra", "08P01"}, {"secret\x00", "08P01"}, {"secre", "28P01"}, {"secret", ""}} {
		rc := dialRaw(t, srv.Addr, 10*time.Second)
		rc.startup("deeplake")
		if _, ok := rc.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
			t.Fatal("want AuthenticationCleartextPassword")
		}
		rc.write(frame('p', cstr(c.pw)))
		if c.code == "" {
			rc.ready()
			continue
		}
		if got := rc.fatal(c.code); c.code == "08P01" && got != "invalid password packet size" {
			t.Errorf("%q: %s", c.pw, got)
		}
	}
}

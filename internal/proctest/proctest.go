// Package proctest runs the deeplaked binary as a child process for tests
// that must see what a client can do to the whole server: crash it, make it
// allocate, hold its connection slots. The process's memory is read from
// /proc, so a test can bound the server's peak resident set.
package proctest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Binary compiles cmd/deeplaked once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deeplaked-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(dir, "deeplaked")
		out, err := exec.Command("go", "build", "-o", buildBin, "github.com/deeplaked/deeplaked/cmd/deeplaked").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// FreeAddr returns a 127.0.0.1 address with a port nobody listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Server is a running deeplaked process.
type Server struct {
	Addr    string
	DataDir string
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	log     []string
}

// Start runs the binary on a free address and a fresh data directory (both
// overridable by args: a later --listen or --data-dir wins), waits until it
// logs that it listens, and kills it when the test ends.
func Start(t testing.TB, env []string, args ...string) *Server {
	t.Helper()
	s := &Server{Addr: FreeAddr(t), DataDir: filepath.Join(t.TempDir(), "data"), exited: make(chan struct{})}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			s.Addr = args[i+1]
		case "--data-dir":
			s.DataDir = args[i+1]
		}
	}
	all := append([]string{"--listen", s.Addr, "--data-dir", s.DataDir}, args...)
	s.cmd = exec.Command(Binary(t), all...)
	s.cmd.Env = append(os.Environ(), env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			if len(s.log) < 10000 {
				s.log = append(s.log, line)
			}
			s.mu.Unlock()
			if !once && strings.Contains(line, "listening") {
				once = true
				close(listening)
			}
		}
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
	select {
	case <-listening:
	case <-s.exited:
		t.Fatalf("server exited before listening:\n%s", s.Log())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not log that it listens:\n%s", s.Log())
	}
	return s
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Host and Port split Addr.
func (s *Server) Host() string { h, _, _ := net.SplitHostPort(s.Addr); return h }

// Port is Addr's port.
func (s *Server) Port() string { _, p, _ := net.SplitHostPort(s.Addr); return p }

// DSN is a libpq URL for user on database db.
func (s *Server) DSN(user, password, db string) string {
	cred := user
	if password != "" {
		cred += ":" + password
	}
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", cred, s.Addr, db)
}

// Alive reports whether the process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Log returns what the server wrote to stderr so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, "\n")
}

// RSS returns the server's current and peak resident set sizes in bytes
// (VmRSS and VmHWM of /proc/<pid>/status).
func (s *Server) RSS(t testing.TB) (cur, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return cur, peak
}

// WaitExit waits up to d for the process to exit and reports whether it did.
func (s *Server) WaitExit(d time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

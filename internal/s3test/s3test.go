// Package s3test runs a real S3-compatible server (versitygw over a
// temporary directory) for tests of any package.
//
// The versitygw binary is found through the DEEPLAKED_VERSITYGW
// environment variable, then $HOME/.cache/deeplaked/bin/versitygw, then
// PATH. ./scripts/test.sh installs it there. A test that needs the server
// fails when the binary is missing; it is never skipped.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/storage"
)

// Server is a running versitygw that serves S3 on 127.0.0.1.
type Server struct {
	// Endpoint is the server's URL, "http://127.0.0.1:PORT".
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Dir is the directory that holds the buckets.
	Dir string

	buckets atomic.Int64
	bin     string
	mu      sync.Mutex
	stop    func() // ends the running versitygw; safe to call twice
}

// Binary returns the path of the versitygw binary, or an error that says
// how to install it.
func Binary() (string, error) {
	if p := os.Getenv("DEEPLAKED_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("DEEPLAKED_VERSITYGW=%s: %w; run ./scripts/test.sh, which installs versitygw", p, err)
		}
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "deeplaked", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("versitygw not found (DEEPLAKED_VERSITYGW, ~/.cache/deeplaked/bin, PATH); run ./scripts/test.sh, which installs it")
}

// Start runs versitygw for the duration of the test and returns once it
// accepts connections. It fails the test if the server cannot start.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s := &Server{AccessKey: "deeplaked-test", SecretKey: "deeplaked-test-secret", Dir: t.TempDir(), bin: bin}
	// The port is picked by listening and closing, so another process can
	// take it before versitygw does; try a few times.
	for try := 1; ; try++ {
		port, err := freePort()
		if err == nil {
			err = s.start(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}
		if err == nil {
			return s
		}
		if try == 3 {
			t.Fatalf("s3test: %v", err)
		}
	}
}

// Restart stops versitygw, leaves it down for down, and starts it again
// on the same address and directory: clients see their requests fail,
// then the same buckets. It fails the test if the server cannot start
// again.
func (s *Server) Restart(t testing.TB, down time.Duration) {
	t.Helper()
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	stop()
	time.Sleep(down)
	var err error
	for try := 0; try < 50; try++ {
		// The address may linger a moment after the kill.
		if err = s.start(t, strings.TrimPrefix(s.Endpoint, "http://")); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("s3test: restarting: %v", err)
}

func (s *Server) start(t testing.TB, addr string) error {
	bin := s.bin
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			stop()
			return fmt.Errorf("versitygw exited before listening on %s (%v): %s", addr, werr, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("versitygw did not listen on %s within 30s: %s", addr, out.String())
		}
	}
	t.Cleanup(stop)
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	s.Endpoint = "http://" + addr
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// NewBucketName returns a bucket name not yet used on this server.
func (s *Server) NewBucketName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("test-%d-%s", s.buckets.Add(1), hex.EncodeToString(b[:]))
}

// Options returns S3Options for bucket on this server, with its
// credentials.
func (s *Server) Options(bucket string) storage.S3Options {
	return storage.S3Options{
		Bucket:    bucket,
		Endpoint:  s.Endpoint,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		Region:    storage.DefaultS3Region,
	}
}

// NewStore returns an S3Store on a fresh bucket. edit, if given, adjusts
// the options first (a prefix, a lower multipart threshold).
func (s *Server) NewStore(t testing.TB, edit ...func(*storage.S3Options)) *storage.S3Store {
	t.Helper()
	opts := s.Options(s.NewBucketName())
	for _, f := range edit {
		f(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := storage.NewS3Store(ctx, opts)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return st
}

// SetEnv points the standard AWS environment variables at this server's
// credentials for the rest of the test, for code that reads them (a
// deeplaked server started with S3 storage).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_REGION", storage.DefaultS3Region)
	// Keep a developer's own AWS profile out of the test.
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(s.Dir, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.Dir, "no-aws-credentials"))
}

// syncBuffer collects the server's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

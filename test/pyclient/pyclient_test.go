// Package pyclient_test runs the Python package's tests (python/tests, with
// Debian's python3-pytest, python3-numpy and python3-torch on
// /usr/bin/python3) against an in-process deeplaked, over TCP
// (DEEPLAKED_DSN) and its Unix socket (DEEPLAKED_UNIX_DSN). scripts/test.sh
// installs them; a missing one fails the test rather than skipping it.
//
// DEEPLAKED_PYTHON names another Python (one with a CUDA build of torch, on
// a machine with a GPU, whose tests then place batches on it); the
// PYTHONPATH the tests are given keeps what the environment's held after
// the package (psycopg, where that Python lacks it).
package pyclient_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/internal/proctest"
	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
)

var python = pythonPath()

func pythonPath() string {
	if p := os.Getenv("DEEPLAKED_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// pythonEnv is the environment with PYTHONPATH set to dir, followed by
// what PYTHONPATH held.
func pythonEnv(dir string) []string {
	path := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		path += string(os.PathListSeparator) + p
	}
	return append(os.Environ(), "PYTHONPATH="+path, "PYTHONDONTWRITEBYTECODE=1")
}

func TestPythonPackage(t *testing.T) {
	sockDir := t.TempDir()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		FlushRows: 64, UnixSocketDir: sockDir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	// test_shared_bucket.py starts servers of its own: TestPythonSharedBucket.
	cmd := exec.Command(python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
		"--ignore", "tests/test_shared_bucket.py", "tests")
	cmd.Dir = root
	cmd.Env = append(pythonEnv(root),
		"DEEPLAKED_DSN=postgres://tester@"+srv.Addr()+"/training?sslmode=disable",
		"DEEPLAKED_UNIX_DSN=host="+sockDir+" port="+port+" user=tester dbname=training sslmode=disable",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("pytest: %v", err)
	}
}

// TestPythonSharedBucket runs python/tests/test_shared_bucket.py, which
// starts versitygw and two deeplaked processes on one S3 prefix and reads
// the shards of one stream, one rank from each server.
func TestPythonSharedBucket(t *testing.T) {
	gw, err := s3test.Binary()
	if err != nil {
		t.Fatal(err)
	}
	bin := proctest.Binary(t)
	root, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/test_shared_bucket.py")
	cmd.Dir = root
	cmd.Env = append(pythonEnv(root), "DEEPLAKED_BIN="+bin, "DEEPLAKED_VERSITYGW="+gw)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("pytest: %v", err)
	}
	if !strings.Contains(string(out), " passed") || strings.Contains(string(out), "skipped") {
		t.Fatalf("pytest ran no test of the shared bucket")
	}
}

// TestPipInstall installs the package with pip (offline, with Debian's
// setuptools: --no-build-isolation) into a fresh directory and streams a
// table through the installed copy, run from outside the checkout.
func TestPipInstall(t *testing.T) {
	root, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	// Build from a copy: a build writes build/ and *.egg-info next to
	// the sources.
	src := filepath.Join(t.TempDir(), "python")
	if out, err := exec.Command("cp", "-r", root, src).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	target := t.TempDir()
	pip := exec.Command(python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
		"--disable-pip-version-check", "--target", target, src)
	pip.Env = append(os.Environ(), "PIP_NO_CACHE_DIR=1")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	script := `
import sys, deeplaked
assert deeplaked.__file__.startswith(sys.argv[2]), deeplaked.__file__
db = deeplaked.connect(sys.argv[1])
db.execute("CREATE TABLE p (id int, v float4[2])")
db.execute("INSERT INTO p SELECT g, ARRAY[g, -g] FROM generate_series(1, 10) g")
got = [b for b in db.dataloader("p").batch_size(4).to_numpy()]
assert [len(b["id"]) for b in got] == [4, 4, 2], got
assert got[0]["v"].shape == (4, 2) and float(got[0]["v"][1, 1]) == -2.0
print("ok")
`
	run := exec.Command(python, "-c", script, "postgres://tester@"+srv.Addr()+"/postgres?sslmode=disable", target)
	run.Dir = t.TempDir()
	run.Env = pythonEnv(target)
	if out, err := run.CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Fatalf("the installed package: %v\n%s", err, out)
	}
}

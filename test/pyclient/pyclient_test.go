// Package pyclient_test runs the Python package's tests (python/tests, with
// Debian's python3-pytest, python3-numpy and python3-torch on
// /usr/bin/python3) against an in-process deeplaked. scripts/test.sh
// installs them; a missing one fails the test rather than skipping it.
package pyclient_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/deeplaked/deeplaked/server"
)

const python = "/usr/bin/python3"

func TestPythonPackage(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), FlushRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root, err := filepath.Abs("../../python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+root,
		"PYTHONDONTWRITEBYTECODE=1",
		"DEEPLAKED_DSN=postgres://tester@"+srv.Addr()+"/training?sslmode=disable",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("pytest: %v", err)
	}
}

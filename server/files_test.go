package server_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/server"
	"github.com/deeplaked/deeplaked/storage"
)

// TestDataDirFileModes writes rows into a fresh data directory until they
// reach chunk objects, and checks that every directory is 0700 and every
// file 0600 whatever the umask: the catalog holds password verifiers.
func TestDataDirFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startOpen(t, server.Options{DataDir: dir, FlushRows: 10, BootstrapPassword: "pw", CheckDataDirPermissions: true})
	conn, err := dial(t, connString(t, srv, "anyone", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := exec1(t, conn, "CREATE TABLE t (a int PRIMARY KEY, b text)"); err != nil {
		t.Fatal(err)
	}
	if err := exec1(t, conn, "INSERT INTO t SELECT g, 'row' FROM generate_series(1, 1000) g"); err != nil {
		t.Fatal(err)
	}
	if err := srv.DB().Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn.Close(t.Context())
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	checkModes(t, dir)
}

// checkModes walks dir: directories 0700, files 0600.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	var files, objects int
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
		} else {
			files++
			if strings.Contains(path, string(filepath.Separator)+"objects"+string(filepath.Separator)) {
				objects++
			}
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 || objects == 0 {
		t.Fatalf("%d files, %d chunk objects: the test wrote too little", files, objects)
	}
}

// TestDataDirPermissions refuses a data directory others can read, as
// PostgreSQL does, and accepts 0700 and 0750.
func TestDataDirPermissions(t *testing.T) {
	for _, c := range []struct {
		mode fs.FileMode
		ok   bool
	}{{0o700, true}, {0o750, true}, {0o755, false}, {0o770, false}, {0o705, false}} {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, c.mode); err != nil { // past the umask
			t.Fatal(err)
		}
		srv, err := server.Start(t.Context(), server.Options{Listen: "127.0.0.1:0", DataDir: dir, CheckDataDirPermissions: true})
		if c.ok {
			if err != nil {
				t.Fatalf("%04o: %v", c.mode, err)
			}
			srv.Close()
			continue
		}
		if err == nil {
			srv.Close()
			t.Fatalf("%04o: server started", c.mode)
		}
		if !errors.Is(err, storage.ErrDataDirPermissions) || !strings.Contains(err.Error(), "has invalid permissions") ||
			!strings.Contains(err.Error(), "u=rwx (0700) or u=rwx,g=rx (0750)") || !strings.Contains(err.Error(), "chmod 0700") {
			t.Fatalf("%04o: %v", c.mode, err)
		}
	}
}

// TestConnectionSettingsShown: the connection settings the server runs
// with are what SHOW reports, and they cannot be SET.
func TestConnectionSettingsShown(t *testing.T) {
	srv := startWith(t, server.Options{MaxConnections: 20, SuperuserReservedConnections: 5, AuthenticationTimeout: 90e9})
	conn, err := dial(t, connString(t, srv, "anyone", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SHOW max_connections":                "20",
		"SHOW superuser_reserved_connections": "5",
		"SHOW authentication_timeout":         "90s",
	} {
		if got := queryText(t, conn, q); got[0][0] != want {
			t.Errorf("%s = %v, want %s", q, got, want)
		}
	}
	wantCode(t, exec1(t, conn, "SET authentication_timeout = '1min'"), "55P02")

	def := startWith(t, server.Options{})
	conn, err = dial(t, connString(t, def, "anyone", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SHOW max_connections":                "100",
		"SHOW superuser_reserved_connections": "3",
		"SHOW authentication_timeout":         "10s",
	} {
		if got := queryText(t, conn, q); got[0][0] != want {
			t.Errorf("default %s = %v, want %s", q, got, want)
		}
	}
}

// TestConnectionSettingsChecked refuses settings PostgreSQL refuses at
// start.
func TestConnectionSettingsChecked(t *testing.T) {
	for _, opts := range []server.Options{
		{MaxConnections: 3, SuperuserReservedConnections: 3},
		{AuthenticationTimeout: 1e6},
		{AuthenticationTimeout: 601e9},
	} {
		opts.Listen, opts.InMemory = "127.0.0.1:0", true
		if srv, err := server.Start(t.Context(), opts); err == nil {
			srv.Close()
			t.Errorf("%+v: started", opts)
		}
	}
}

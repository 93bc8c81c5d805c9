package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTempFile makes a temporary file in the data directory: it works as a
// file but has no name left, and Open clears what a crash left in tmp.
func TestTempFile(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "tmp", "shuffle-left-by-a-crash")
	if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary file is still there: %v", err)
	}
	f, err := db.TempFile("shuffle-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("rows"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "rows" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "tmp")); err != nil || len(ents) != 0 {
		t.Fatalf("tmp holds %d names, %v", len(ents), err)
	}
}

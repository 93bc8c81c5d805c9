package storage

import (
	"fmt"
	"os"
	"path/filepath"
)

// TempFile creates a temporary file for a statement's work that does not
// fit in memory (an exact shuffle of a query's rows): in Dir/tmp, or the
// system's temporary directory for an in-memory database. The file is
// unlinked at once, so it goes away when closed, or when the process dies
// with it open; only its descriptor names it.
func (db *DB) TempFile(pattern string) (*os.File, error) {
	dir := os.TempDir()
	if !db.opts.InMemory {
		dir = filepath.Join(db.opts.Dir, "tmp")
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return nil, fmt.Errorf("storage: creating the temporary directory: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("storage: creating a temporary file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: unlinking a temporary file: %w", err)
	}
	return f, nil
}

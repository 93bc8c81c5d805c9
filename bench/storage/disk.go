package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// tableDirs returns the table ids that have a directory under
// <data dir>/objects/tables.
func tableDirs(dataDir string) (map[string]bool, error) {
	ents, err := os.ReadDir(filepath.Join(dataDir, "objects", "tables"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(ents))
	for _, e := range ents {
		ids[e.Name()] = true
	}
	return ids, nil
}

// newTableDir returns the one table directory in after that is not in
// before, or "" if there is none or several.
func newTableDir(before, after map[string]bool) string {
	var found []string
	for id := range after {
		if !before[id] {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// tableDisk is what one table's objects take in the object store.
type tableDisk struct {
	// Cols holds the bytes of the chunk objects per stored column number
	// (table ordinals, then _rowid, then _xmin).
	Cols      map[int]int64
	Chunks    map[int]int
	Frags     int
	Manifests int64
	Total     int64
}

// measureTable sums the sizes of table id's objects: chunk objects
// tables/<id>/frags/<frag>/<col hex4>-<seq hex8>.dlc by column, and
// manifests.
func measureTable(dataDir, id string) (tableDisk, error) {
	d := tableDisk{Cols: map[int]int64{}, Chunks: map[int]int{}}
	root := filepath.Join(dataDir, "objects", "tables", id)
	frags := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		size := info.Size()
		d.Total += size
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		switch {
		case len(parts) == 3 && parts[0] == "frags" && strings.HasSuffix(parts[2], ".dlc"):
			col, err := strconv.ParseInt(parts[2][:4], 16, 32)
			if err != nil {
				return nil // not a chunk object
			}
			frags[parts[1]] = true
			d.Cols[int(col)] += size
			d.Chunks[int(col)]++
		case len(parts) == 2 && parts[0] == "manifests":
			d.Manifests += size
		}
		return nil
	})
	d.Frags = len(frags)
	return d, err
}

// chunkFiles lists the chunk objects of column col of table id, in key
// order.
func chunkFiles(dataDir, id string, col int) ([]string, error) {
	prefix := strconv.FormatInt(int64(col)|1<<16, 16)[1:] + "-" // 4 hex digits
	var files []string
	root := filepath.Join(dataDir, "objects", "tables", id, "frags")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".dlc") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

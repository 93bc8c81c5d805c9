package sqllogic

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Glob returns the files matching pattern, in lexical order. Besides the
// syntax of filepath.Match, a "**" path element matches any number of
// directories, so "testdata/**/*.test" finds every .test file below testdata.
func Glob(pattern string) ([]string, error) {
	pattern = filepath.ToSlash(filepath.Clean(pattern))
	if !strings.Contains(pattern, "**") {
		return filepath.Glob(filepath.FromSlash(pattern))
	}
	// Walk from the longest directory prefix free of wildcards.
	parts := strings.Split(pattern, "/")
	n := 0
	for n < len(parts)-1 && !strings.ContainsAny(parts[n], "*?[\\") {
		n++
	}
	root := strings.Join(parts[:n], "/")
	switch {
	case root == "" && strings.HasPrefix(pattern, "/"):
		root = "/"
	case root == "":
		root = "."
	}
	var matches []string
	err := filepath.WalkDir(filepath.FromSlash(root), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ok, err := matchPath(parts, strings.Split(filepath.ToSlash(path), "/"))
		if err != nil {
			return err
		}
		if ok {
			matches = append(matches, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(matches)
	return matches, nil
}

// matchPath matches path elements against pattern elements, where "**"
// matches zero or more elements.
func matchPath(pattern, path []string) (bool, error) {
	for len(pattern) > 0 {
		if pattern[0] == "**" {
			for i := 0; i <= len(path); i++ {
				if ok, err := matchPath(pattern[1:], path[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(path) == 0 {
			return false, nil
		}
		ok, err := filepath.Match(pattern[0], path[0])
		if !ok || err != nil {
			return false, err
		}
		pattern, path = pattern[1:], path[1:]
	}
	return len(path) == 0, nil
}

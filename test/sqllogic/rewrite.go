package sqllogic

import (
	"os"
	"slices"
	"strings"
)

// Rewrite replaces, in the file at path that f was parsed from, the
// expected section of each query of fails that has a Result with that
// Result, so that the file expects what the server returned, and returns
// the failures it did not mend. A query without a "----" line is left as
// it is: give a new query an empty section ("----" and a blank line) to
// have it filled. The changes are meant to be read as a diff before they
// are committed.
func Rewrite(path string, f *File, fails []Failure) (rest []Failure, err error) {
	records := make(map[int]*Record, len(f.Records))
	for i := range f.Records {
		records[f.Records[i].Line] = &f.Records[i]
	}
	var mend []Failure
	for _, fail := range fails {
		if rec := records[fail.Line]; fail.Result != nil && rec != nil && rec.ResultLine > 0 {
			mend = append(mend, fail)
		} else {
			rest = append(rest, fail)
		}
	}
	if len(mend) == 0 {
		return rest, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return fails, err
	}
	// Lines keep their "\n"; sections replaced from the end first leave
	// the line numbers of those before them as they were.
	lines := strings.SplitAfter(string(src), "\n")
	slices.SortFunc(mend, func(a, b Failure) int { return b.Line - a.Line })
	for _, fail := range mend {
		rec := records[fail.Line]
		at := min(rec.ResultLine-1, len(lines))
		if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
			lines[at-1] += "\n"
		}
		section := make([]string, len(fail.Result))
		for i, l := range fail.Result {
			section[i] = l + "\n"
		}
		lines = slices.Replace(lines, at, min(at+len(rec.Expected), len(lines)), section...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		return fails, err
	}
	return rest, nil
}

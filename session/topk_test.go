package session

import (
	"context"
	"strings"
	"testing"
)

// TestTopKParams runs ORDER BY ... LIMIT $1 OFFSET $2 prepared once and
// executed with several values: the sort keeps the first $1 + $2 rows
// the values given say (all of them for a NULL limit), and EXPLAIN shows
// the bound values.
func TestTopKParams(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int, k int)", "")
	mustRun(t, s, "INSERT INTO t SELECT i, (i * 7) % 10 FROM generate_series(1, 3000) i", "")
	exec := func(stmt string, params ...[]byte) string {
		t.Helper()
		if _, err := s.Prepare("", stmt, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Bind("", "", nil, params); err != nil {
			t.Fatal(err)
		}
		r := &recorder{}
		if _, err := s.Execute(context.Background(), "", 0, r); err != nil {
			t.Fatalf("%s %q: %v", stmt, params, err)
		}
		return strings.Join(r.out, "; ")
	}
	const q = "SELECT id FROM t ORDER BY k DESC, id LIMIT $1 OFFSET $2"
	for _, c := range []struct {
		limit, offset []byte
		want          string
	}{
		{[]byte("3"), []byte("0"), "columns id:integer; 7; 17; 27; SELECT 3"},
		{[]byte("2"), []byte("299"), "columns id:integer; 2997; 4; SELECT 2"},
		{[]byte("0"), []byte("5"), "columns id:integer; SELECT 0"},
		{[]byte("2"), []byte("2999"), "columns id:integer; 3000; SELECT 1"},
	} {
		if got := exec(q, c.limit, c.offset); got != c.want {
			t.Errorf("LIMIT %s OFFSET %s:\n got %s\nwant %s", c.limit, c.offset, got, c.want)
		}
	}
	if got := exec("SELECT count(*) FROM (SELECT id FROM t ORDER BY k LIMIT $1) s", nil); got != "columns count:bigint; 3000; SELECT 1" {
		t.Errorf("LIMIT NULL: %s", got)
	}
	if got := exec("EXPLAIN "+q, []byte("10"), []byte("5")); !strings.Contains(got, "Top-N: 15") {
		t.Errorf("EXPLAIN with LIMIT 10 OFFSET 5 bound:\n%s", got)
	}
}

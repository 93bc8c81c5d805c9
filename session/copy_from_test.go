package session

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// copyInput returns n rows "id\tvalue" from id start, about 20 bytes
// each: 300,000 of them pass the 4 MiB of one parsing block.
func copyInput(start, n int) string {
	var sb strings.Builder
	for i := start; i < start+n; i++ {
		fmt.Fprintf(&sb, "%d\tvalue %07d\n", i, i)
	}
	return sb.String()
}

// A COPY whose input spans several blocks inserts its rows in input
// order; one that fails late, on bad data or on a key repeated across
// blocks, inserts nothing, and names the line of the bad data.
func TestCopyFromSeveralBlocks(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int PRIMARY KEY, v text)", "")
	const n = 300000
	if err := runCopyIn(t, s, "COPY t FROM STDIN", copyInput(0, n)); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, "SELECT count(*), min(id), max(id) FROM t", fmt.Sprintf("columns count:bigint,min:integer,max:integer; %d|0|%d; SELECT 1", n, n-1))
	// Row ids follow the input: ordered by _rowid, ids ascend.
	mustRun(t, s, "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY _rowid) AS prev FROM t) x WHERE id <> prev + 1",
		"columns count:bigint; 0; SELECT 1")

	err := runCopyIn(t, s, "COPY t FROM STDIN", copyInput(n, n)+"700000\tlast\textra\n")
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != pgerror.BadCopyFileFormat || pe.Where != `COPY t, line 300001: "700000	last	extra"` {
		t.Fatalf("bad last line: %v (%+v)", err, pe)
	}
	err = runCopyIn(t, s, "COPY t FROM STDIN", copyInput(n, n)+copyInput(n+10, 1))
	if !errors.As(err, &pe) || pe.Code != pgerror.UniqueViolation || pe.Detail != fmt.Sprintf("Key (id)=(%d) already exists.", n+10) {
		t.Fatalf("repeated key: %v", err)
	}
	mustRun(t, s, "SELECT count(*) FROM t", fmt.Sprintf("columns count:bigint; %d; SELECT 1", n))
}

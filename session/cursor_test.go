package session

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestSQLCursors(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int, v text)", "")
	mustRun(t, s, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')", "")
	// Without a transaction block a cursor WITHOUT HOLD cannot exist.
	wantCode(t, s, "DECLARE c CURSOR FOR SELECT id FROM t", pgerror.NoActiveSQLTransaction)

	// psycopg2's named cursors: DECLARE, FETCH FORWARD n until empty, CLOSE.
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, `DECLARE "c1" CURSOR WITHOUT HOLD FOR SELECT id, v FROM t ORDER BY id`, "DECLARE CURSOR")
	wantCode(t, s, `DECLARE "c1" CURSOR FOR SELECT 1`, pgerror.DuplicateCursor)
	mustRun(t, s, "BEGIN", "") // a warning in PostgreSQL; the block goes on
	mustRun(t, s, "ROLLBACK", "ROLLBACK")

	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, `DECLARE "c1" CURSOR WITHOUT HOLD FOR SELECT id, v FROM t ORDER BY id`, "DECLARE CURSOR")
	mustRun(t, s, `FETCH FORWARD 2 FROM "c1"`, "columns id:integer,v:text; 1|a; 2|b; FETCH 2")
	mustRun(t, s, `MOVE 1 IN c1`, "MOVE 1")
	mustRun(t, s, `FETCH c1`, "columns id:integer,v:text; 4|d; FETCH 1")
	mustRun(t, s, `FETCH ALL FROM c1`, "columns id:integer,v:text; 5|e; FETCH 1")
	mustRun(t, s, `FETCH 10 FROM c1`, "columns id:integer,v:text; FETCH 0")
	wantCode(t, s, `FETCH BACKWARD 1 FROM c1`, pgerror.FeatureNotSupported)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")

	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, `DECLARE c2 CURSOR FOR SELECT id FROM t WHERE id > 3 ORDER BY id`, "DECLARE CURSOR")
	mustRun(t, s, `CLOSE c2`, "CLOSE CURSOR")
	wantCode(t, s, `FETCH c2`, pgerror.InvalidCursorName)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")

	// A cursor ends with its transaction, unless it is WITH HOLD: that one
	// keeps the rows of its snapshot after COMMIT.
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, `DECLARE c3 CURSOR FOR SELECT id FROM t`, "DECLARE CURSOR")
	mustRun(t, s, "COMMIT", "COMMIT")
	wantCode(t, s, `FETCH c3`, pgerror.InvalidCursorName)
	mustRun(t, s, `DECLARE h CURSOR WITH HOLD FOR SELECT id FROM t ORDER BY id DESC`, "DECLARE CURSOR")
	mustRun(t, s, "DELETE FROM t", "DELETE 5")
	mustRun(t, s, `FETCH 2 FROM h`, "columns id:integer; 5; 4; FETCH 2")
	mustRun(t, s, `CLOSE ALL`, "CLOSE CURSOR ALL")
	wantCode(t, s, `FETCH h`, pgerror.InvalidCursorName)
	wantCode(t, s, `DEALLOCATE nope`, pgerror.InvalidSQLStatementName)
	mustRun(t, s, `DEALLOCATE ALL`, "DEALLOCATE ALL")
}

// TestDeclareCursorParams checks a DECLARE prepared over the extended
// protocol with a parameter in its query, as pgx sends it: Parse without
// types must describe $1 with the type its use gives it, so that the
// client sends a value for it, and the cursor reads with that value.
func TestDeclareCursorParams(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int, v text)", "")
	mustRun(t, s, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')", "")
	mustRun(t, s, "BEGIN", "BEGIN")
	ps, err := s.Prepare("", "DECLARE c CURSOR FOR SELECT id, v FROM t WHERE id > $1 ORDER BY id", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ps.ParamOIDs(), []uint32{23}; !slices.Equal(got, want) {
		t.Fatalf("DECLARE ... $1: parameter OIDs %v, want %v (int4)", got, want)
	}
	if ps.Columns() != nil {
		t.Fatalf("DECLARE has result columns %v", ps.Columns())
	}
	if _, err := s.Bind("", "", nil, [][]byte{[]byte("2")}); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if _, err := s.Execute(context.Background(), "", 0, r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.out, "; "); got != "DECLARE CURSOR" {
		t.Fatalf("DECLARE: %s", got)
	}
	mustRun(t, s, "FETCH 2 FROM c", "columns id:integer,v:text; 3|c; 4|d; FETCH 2")
	mustRun(t, s, "FETCH 2 FROM c", "columns id:integer,v:text; 5|e; FETCH 1")
	mustRun(t, s, "COMMIT", "COMMIT")
	// The query is bound at Parse, as PostgreSQL analyzes it there.
	if _, err := s.Prepare("", "DECLARE d CURSOR FOR SELECT * FROM missing WHERE id > $1", nil); pgerror.GetCode(err) != pgerror.UndefinedTable {
		t.Fatalf("DECLARE over a missing table: %v, want 42P01", err)
	}
}

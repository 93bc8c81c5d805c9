package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// recorder is a ResultWriter that keeps what it is given as text. A COPY
// FROM STDIN reads copyData.
type recorder struct {
	out      []string
	copyData io.Reader
	// copied collects the data of COPY TO.
	copied bytes.Buffer
}

func (r *recorder) WriteColumns(cols []Column) error {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name + ":" + c.Type.String()
	}
	r.out = append(r.out, "columns "+strings.Join(names, ","))
	return nil
}

func (r *recorder) WriteBatch(b *types.Batch) error {
	for i := 0; i < b.Len(); i++ {
		vals := make([]string, len(b.Cols))
		for j, c := range b.Cols {
			if c.Nulls[i] {
				vals[j] = "NULL"
			} else {
				vals[j] = string(types.AppendText(nil, c, i))
			}
		}
		r.out = append(r.out, strings.Join(vals, "|"))
	}
	return nil
}

func (r *recorder) WriteComplete(tag string) error { r.out = append(r.out, tag); return nil }
func (r *recorder) WriteEmpty() error              { r.out = append(r.out, "empty"); return nil }

func (r *recorder) CopyIn(binary bool, ncols int) (io.Reader, error) {
	r.out = append(r.out, fmt.Sprintf("copy in binary=%v columns=%d", binary, ncols))
	if r.copyData == nil {
		return strings.NewReader(""), nil
	}
	return r.copyData, nil
}

func (r *recorder) CopyOut(binary bool, ncols int) (io.Writer, error) {
	r.out = append(r.out, fmt.Sprintf("copy out binary=%v columns=%d", binary, ncols))
	return &r.copied, nil
}

func newSession(t *testing.T) *Session {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return connect(t, NewEngine(db, nil), "u")
}

// run executes q and returns the recorded output joined by "; ".
func run(t *testing.T, s *Session, q string) (string, error) {
	t.Helper()
	r := &recorder{}
	err := s.ExecSimple(context.Background(), q, r)
	return strings.Join(r.out, "; "), err
}

func mustRun(t *testing.T, s *Session, q, want string) {
	t.Helper()
	got, err := run(t, s, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if want != "" && got != want {
		t.Fatalf("%s:\n got %s\nwant %s", q, got, want)
	}
}

func wantCode(t *testing.T, s *Session, q string, code pgerror.Code) {
	t.Helper()
	_, err := run(t, s, q)
	if got := pgerror.GetCode(err); err == nil || got != code {
		t.Fatalf("%s: got %v (%s), want %s", q, err, got, code)
	}
}

func TestImplicitTransactionOfAQueryString(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE")
	// The second statement fails, so the first is rolled back with it.
	wantCode(t, s, "INSERT INTO t VALUES (1); INSERT INTO t VALUES (1)", pgerror.UniqueViolation)
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 0; SELECT 1")
	if s.TxStatus() != TxIdle {
		t.Fatalf("status %c", s.TxStatus())
	}
	mustRun(t, s, "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)", "INSERT 0 1; INSERT 0 1")
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	mustRun(t, s, "", "empty")
}

func TestExplicitTransactionBlock(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int PRIMARY KEY, v text)", "")
	mustRun(t, s, "BEGIN", "BEGIN")
	if s.TxStatus() != TxActive {
		t.Fatalf("status %c after BEGIN", s.TxStatus())
	}
	mustRun(t, s, "INSERT INTO t VALUES (1, 'a')", "INSERT 0 1")
	mustRun(t, s, "SELECT v FROM t", "columns v:text; a; SELECT 1")
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 0; SELECT 1")

	mustRun(t, s, "BEGIN; INSERT INTO t VALUES (1, 'a')", "BEGIN; INSERT 0 1")
	wantCode(t, s, "SELECT nope FROM t", pgerror.UndefinedColumn)
	if s.TxStatus() != TxFailed {
		t.Fatalf("status %c after error in block", s.TxStatus())
	}
	wantCode(t, s, "SELECT 1", pgerror.InFailedSQLTransaction)
	mustRun(t, s, "COMMIT", "ROLLBACK")
	if s.TxStatus() != TxIdle {
		t.Fatalf("status %c after COMMIT of failed block", s.TxStatus())
	}
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 0; SELECT 1")

	mustRun(t, s, "BEGIN; INSERT INTO t VALUES (2, 'b'); COMMIT", "BEGIN; INSERT 0 1; COMMIT")
	mustRun(t, s, "SELECT id, v FROM t", "columns id:integer,v:text; 2|b; SELECT 1")
}

func TestStatementsEndToEnd(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id serial PRIMARY KEY, a int, b text, c float8 DEFAULT 1.5, d bool)", "CREATE TABLE")
	mustRun(t, s, "INSERT INTO t (a, b, d) VALUES (1, 'x', true), (2, 'y', false), (NULL, 'z', NULL), (4, NULL, true) RETURNING id, a * 2",
		"columns id:integer,?column?:integer; 1|2; 2|4; 3|NULL; 4|8; INSERT 0 4")
	mustRun(t, s, "SELECT a, b FROM t WHERE a > 1 OR b = 'z' ORDER BY a DESC NULLS LAST",
		"columns a:integer,b:text; 4|NULL; 2|y; NULL|z; SELECT 3")
	mustRun(t, s, "SELECT count(*), count(a), sum(a), min(b), max(b) FROM t",
		"columns count:bigint,count:bigint,sum:bigint,min:text,max:text; 4|3|7|x|z; SELECT 1")
	mustRun(t, s, "SELECT d, count(*) FROM t GROUP BY d ORDER BY 2 DESC, d",
		"columns d:boolean,count:bigint; t|2; f|1; NULL|1; SELECT 3")
	mustRun(t, s, "SELECT a FROM t WHERE a IN (1, 4) AND b LIKE '_' ORDER BY a LIMIT 1 OFFSET 0",
		"columns a:integer; 1; SELECT 1")
	mustRun(t, s, "SELECT a FROM t WHERE a BETWEEN 2 AND 4 AND NOT d ORDER BY a", "columns a:integer; 2; SELECT 1")
	mustRun(t, s, "UPDATE t SET a = a + 10, c = DEFAULT WHERE id = 2", "UPDATE 1")
	mustRun(t, s, "DELETE FROM t WHERE b IS NULL RETURNING id", "columns id:integer; 4; DELETE 1")
	mustRun(t, s, "SELECT id, a FROM t ORDER BY id", "columns id:integer,a:integer; 1|1; 2|12; 3|NULL; SELECT 3")
	mustRun(t, s, "SELECT CASE WHEN a IS NULL THEN 0 ELSE 100 / a END AS q FROM t ORDER BY q",
		"columns q:integer; 0; 8; 100; SELECT 3")
	mustRun(t, s, "SELECT a FROM t WHERE a <> 0 AND 10 / a > 5", "columns a:integer; 1; SELECT 1")
	mustRun(t, s, "SELECT DISTINCT d FROM t ORDER BY d", "columns d:boolean; f; t; NULL; SELECT 3")
	mustRun(t, s, "SHOW server_version", "columns server_version:text; 15.0; SHOW")
	mustRun(t, s, "SET application_name = 'x'; SHOW application_name", "SET; columns application_name:text; x; SHOW")

	wantCode(t, s, "SELECT a, count(*) FROM t", pgerror.GroupingError)
	wantCode(t, s, "SELECT count(*) FROM t WHERE count(*) > 1", pgerror.GroupingError)
	wantCode(t, s, "SELECT 2147483647 + 1", pgerror.NumericValueOutOfRange)
	wantCode(t, s, "SELECT 1 / 0", pgerror.DivisionByZero)
	wantCode(t, s, "INSERT INTO t (a) VALUES ('x')", pgerror.InvalidTextRepresentation)
	wantCode(t, s, "INSERT INTO t (id, a) VALUES (1, 1)", pgerror.UniqueViolation)
	wantCode(t, s, "INSERT INTO t (nope) VALUES (1)", pgerror.UndefinedColumn)
	wantCode(t, s, "INSERT INTO t (id) VALUES (NULL)", pgerror.NotNullViolation)
	wantCode(t, s, "SELECT b + 1 FROM t", pgerror.UndefinedFunction)
	wantCode(t, s, "SHOW nope", pgerror.UndefinedObject)
	wantCode(t, s, "CREATE TABLE t (x int)", pgerror.DuplicateTable)
	wantCode(t, s, "DROP TABLE nope", pgerror.UndefinedTable)
	mustRun(t, s, "DROP TABLE IF EXISTS nope; DROP TABLE t", "DROP TABLE; DROP TABLE")
	wantCode(t, s, "SELECT * FROM t", pgerror.UndefinedTable)
}

// TestOutputNames: columns are named as PostgreSQL names them.
func TestOutputNames(t *testing.T) {
	s := newSession(t)
	got, err := run(t, s, "SELECT (SELECT 1 AS x), (SELECT 2), EXISTS (SELECT 1), ARRAY(SELECT 1), ARRAY[1], (SELECT v FROM (VALUES (3)) s(v))")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.SplitN(strings.TrimPrefix(got, "columns "), ";", 2)[0]
	var only []string
	for _, c := range strings.Split(names, ",") {
		only = append(only, strings.SplitN(c, ":", 2)[0])
	}
	if want := "x ?column? exists array array v"; strings.Join(only, " ") != want {
		t.Fatalf("names %q, want %q", strings.Join(only, " "), want)
	}
}

// connect starts a session for user on database postgres.
func connect(t testing.TB, eng *Engine, user string) *Session {
	t.Helper()
	s, err := eng.Connect(user, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

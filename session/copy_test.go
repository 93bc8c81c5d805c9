package session

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// runCopy runs q with data as the COPY stream.
func runCopy(t *testing.T, s *Session, q, data string) (string, error) {
	t.Helper()
	r := &recorder{copyData: strings.NewReader(data)}
	err := s.ExecSimple(context.Background(), q, r)
	return strings.Join(r.out, "; "), err
}

func TestCopyFrom(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id serial PRIMARY KEY, a int, b text DEFAULT 'dflt')", "")
	got, err := runCopy(t, s, "COPY t (a) FROM STDIN; SELECT id, a, b FROM t ORDER BY id", "1\n\\N\n3\n")
	want := "copy in binary=false columns=1; COPY 3; columns id:integer,a:integer,b:text; 1|1|dflt; 2|NULL|dflt; 3|3|dflt; SELECT 3"
	if err != nil || got != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	if got, err := runCopy(t, s, "COPY t FROM STDIN (FORMAT binary)", "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff"); err != nil ||
		got != "copy in binary=true columns=3; COPY 0" {
		t.Fatalf("binary: %s, %v", got, err)
	}

	// A failed COPY leaves nothing behind, with or without other
	// statements in its implicit transaction.
	for _, q := range []string{"COPY t (a) FROM STDIN", "INSERT INTO t (a) VALUES (9); COPY t (a) FROM STDIN"} {
		_, err = runCopy(t, s, q, "4\n5\nx\n")
		if pgerror.GetCode(err) != pgerror.InvalidTextRepresentation || pgerror.Convert(err).Where != `COPY t, line 3, column a: "x"` {
			t.Fatalf("%s: %v", q, err)
		}
		mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 3; SELECT 1")
	}
	// A duplicate primary key is 23505 and rolls the COPY back too.
	if _, err = runCopy(t, s, "COPY t (id, a) FROM STDIN", "100\t1\n1\t2\n"); pgerror.GetCode(err) != pgerror.UniqueViolation {
		t.Fatalf("duplicate key: %v", err)
	}
	mustRun(t, s, "SELECT count(*) FROM t", "columns count:bigint; 3; SELECT 1")
}

func TestVacuumOutsideTransactionBlocks(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (a int)", "")
	mustRun(t, s, "BEGIN", "BEGIN")
	wantCode(t, s, "VACUUM t", pgerror.ActiveSQLTransaction)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	wantCode(t, s, "VACUUM t; SELECT 1", pgerror.ActiveSQLTransaction)
	wantCode(t, s, "SELECT 1; VACUUM", pgerror.ActiveSQLTransaction)
	wantCode(t, s, "VACUUM nope", pgerror.UndefinedTable)
}

// cancelingWriter cancels the statement at its first write.
type cancelingWriter struct {
	cancel context.CancelFunc
	n      int
}

func (w *cancelingWriter) Write(p []byte) (int, error) {
	w.n++
	w.cancel()
	return len(p), nil
}

// cancelRecorder hands COPY TO a cancelingWriter.
type cancelRecorder struct {
	recorder
	w *cancelingWriter
}

func (r *cancelRecorder) CopyOut(bool, int) (io.Writer, error) { return r.w, nil }

func TestCopyTo(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE t (id int, b text)", "")
	r := &recorder{}
	err := s.ExecSimple(context.Background(), "INSERT INTO t VALUES (1, 'a\tb'), (2, NULL); COPY t TO STDOUT; COPY (SELECT b FROM t ORDER BY id) TO STDOUT (FORMAT csv, HEADER)", r)
	if got, want := strings.Join(r.out, "; "), "INSERT 0 2; copy out binary=false columns=2; COPY 2; copy out binary=false columns=1; COPY 2"; err != nil || got != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	if got, want := r.copied.String(), "1\ta\\tb\n2\t\\N\nb\na\tb\n\n"; got != want {
		t.Errorf("data %q, want %q", got, want)
	}

	// A version of the table, and a branch, by name: COPY reads them as
	// a query of them; COPY t FROM into a version is 25006.
	mustRun(t, s, "SELECT deeplake_tag('t', 'two')", "columns deeplake_tag:text; two; SELECT 1")
	mustRun(t, s, "SELECT deeplake_branch('t', 'dev')", "columns deeplake_branch:text; dev; SELECT 1")
	mustRun(t, s, "DELETE FROM t", "DELETE 2")
	r = &recorder{}
	if err := s.ExecSimple(context.Background(), `COPY (SELECT id FROM "t@two" ORDER BY id) TO STDOUT; COPY (SELECT id FROM deeplake_at('t', 'dev')) TO STDOUT (FORMAT csv)`, r); err != nil {
		t.Fatal(err)
	}
	if got := r.copied.String(); got != "1\n2\n1\n2\n" {
		t.Errorf("copies of versions: %q", got)
	}
	wantCode(t, s, `COPY "t@two" FROM STDIN`, pgerror.ReadOnlySQLTransaction)

	// Errors before any data: no CopyOut.
	for q, code := range map[string]pgerror.Code{
		"COPY nope TO STDOUT":                             pgerror.UndefinedTable,
		"COPY t TO STDOUT (FORMAT csv, FORCE_QUOTE (zz))": pgerror.UndefinedColumn,
		"COPY t TO '/tmp/t'":                              pgerror.FeatureNotSupported,
		"COPY (SELECT nope FROM t) TO STDOUT":             pgerror.UndefinedColumn,
	} {
		r := &recorder{}
		if err := s.ExecSimple(context.Background(), q, r); pgerror.GetCode(err) != code || len(r.out) != 0 {
			t.Errorf("%s: %v, %v", q, err, r.out)
		}
	}

	// A cancel stops the stream at the next batch.
	_, err = runCopy(t, s, "COPY t FROM STDIN", strings.Repeat("3\tx\n", 5000))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cr := &cancelRecorder{w: &cancelingWriter{cancel: cancel}}
	if err := s.ExecSimple(ctx, "COPY t TO STDOUT", cr); pgerror.GetCode(err) != pgerror.QueryCanceled || cr.w.n >= 5002 {
		t.Errorf("canceled COPY: %v after %d rows", err, cr.w.n)
	}
}

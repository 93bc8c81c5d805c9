package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/session"
	"github.com/deeplaked/deeplaked/storage"
)

// realEngine serves real sessions over an in-memory database, for tests
// of statements whose protocol flow only a real session drives (COPY).
type realEngine struct{ eng *session.Engine }

func (e realEngine) NewSession(info StartupInfo) (Session, error) {
	s, err := e.eng.Connect(info.User, info.Database)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// startRealServer starts a server with real sessions over a fresh
// in-memory database.
func startRealServer(t testing.TB) *testServer {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: ln.Addr().String(), log: &syncBuffer{}, done: make(chan error, 1)}
	logger := slog.New(slog.NewTextHandler(ts.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eng := session.NewEngine(db, logger)
	eng.CreateDatabases = true
	ts.Server = NewServer(realEngine{eng}, Options{Logger: logger, AuthenticationTimeout: 5 * time.Second})
	go func() { ts.done <- ts.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.done; err != nil {
			t.Errorf("serve: %v", err)
		}
		db.Close()
	})
	return ts
}

// mustExec runs sql and fails the test on error.
func mustExec(t *testing.T, conn *pgconn.PgConn, sql string) []*pgconn.Result {
	t.Helper()
	res, err := execAll(t, conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

// queryText runs a query and returns its rows as text, NULL as "NULL",
// values joined by "|", rows by "\n".
func queryText(t *testing.T, conn *pgconn.PgConn, sql string) string {
	t.Helper()
	res := mustExec(t, conn, sql)
	var rows []string
	for _, row := range res[len(res)-1].Rows {
		vals := make([]string, len(row))
		for i, v := range row {
			vals[i] = "NULL"
			if v != nil {
				vals[i] = string(v)
			}
		}
		rows = append(rows, strings.Join(vals, "|"))
	}
	return strings.Join(rows, "\n")
}

func copyFrom(t *testing.T, conn *pgconn.PgConn, sql string, data io.Reader) (pgconn.CommandTag, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return conn.CopyFrom(ctx, data, sql)
}

func TestCopyFromText(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, `CREATE TABLE t (id serial, n int, s text, f float8, b bool, j jsonb,
		v vector(3), m float32[2][2], r int16[], k int DEFAULT 7)`)
	data := "1\ttab\\there\t1.5\tt\t{\"b\": 1, \"a\": [1]}\t[1,2,3]\t{{1,2},{3,4}}\t{5,6,7}\n" +
		"\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n" +
		"3\tback\\\\slash \\x41\\102\\n.\t-0.25\toff\t[]\t[0.5, 1e3, -2]\t[[1,1],[2,2]]\t{}\n" +
		"4\t\\\\N\t1e300\t1\tnull\t\\N\t\\N\t{1}\n" +
		"\\.\n" +
		"ignored\tafter\tthe\tend\tmarker\n"
	tag, err := copyFrom(t, conn, "COPY t (n, s, f, b, j, v, m, r) FROM STDIN", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY 4" {
		t.Errorf("tag = %q, want COPY 4", tag)
	}
	want := `1|1|tab	here|1.5|t|{"a": [1], "b": 1}|[1,2,3]|{{1,2},{3,4}}|{5,6,7}|7
2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|7
3|3|back\slash AB
.|-0.25|f|[]|[0.5,1000,-2]|{{1,1},{2,2}}|{}|7
4|4|\N|1e+300|t|null|NULL|NULL|{1}|7`
	if got := queryText(t, conn, "SELECT * FROM t ORDER BY id"); got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}

	// Options: another delimiter and NULL string, a header line, CRLF.
	mustExec(t, conn, "CREATE TABLE u (a int, b text)")
	data = "a|b\r\n1|x\r\n-|y\r\n3|\r\n"
	if _, err := copyFrom(t, conn, "COPY u FROM STDIN WITH (DELIMITER '|', NULL '-', HEADER)", strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := queryText(t, conn, "SELECT * FROM u ORDER BY b"); got != "3|\n1|x\nNULL|y" {
		t.Errorf("rows = %q", got)
	}
}

func TestCopyFromCSV(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE t (a int, b text, c text)")
	data := "a,b,c\n" +
		"1,plain,\"quoted, with comma\"\n" +
		"2,\"two\nlines\",\"say \"\"hi\"\"\"\n" +
		"3,,\"\"\n" +
		"4,\"a\"\"b\"after,x\n" +
		"\\.\n"
	tag, err := copyFrom(t, conn, "COPY t FROM STDIN WITH (FORMAT csv, HEADER match)", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY 4" {
		t.Errorf("tag = %q", tag)
	}
	want := "1|plain|quoted, with comma\n2|two\nlines|say \"hi\"\n3|NULL|\n4|a\"bafter|x"
	if got := queryText(t, conn, "SELECT * FROM t ORDER BY a"); got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}

	// The old syntax, other quote, escape, delimiter and NULL.
	data = "x;'it\\'s; fine';NULL\ny;'\\\\';'NULL'\n"
	mustExec(t, conn, "CREATE TABLE u (b text, c text, d text)")
	if _, err := copyFrom(t, conn, "COPY u FROM STDIN WITH CSV DELIMITER ';' NULL AS 'NULL' QUOTE AS '''' ESCAPE AS '\\'", strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := queryText(t, conn, "SELECT * FROM u ORDER BY b"); got != "x|it's; fine|NULL\ny|\\|NULL" {
		t.Errorf("rows = %q", got)
	}
}

// pgcopy builds a binary COPY stream.
type pgcopy struct{ b []byte }

func newPGCopy() *pgcopy {
	return &pgcopy{b: append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)}
}

func (p *pgcopy) tuple(fields ...[]byte) *pgcopy {
	p.b = binary.BigEndian.AppendUint16(p.b, uint16(len(fields)))
	for _, f := range fields {
		if f == nil {
			p.b = binary.BigEndian.AppendUint32(p.b, math.MaxUint32) // -1: NULL
			continue
		}
		p.b = binary.BigEndian.AppendUint32(p.b, uint32(len(f)))
		p.b = append(p.b, f...)
	}
	return p
}

func (p *pgcopy) end() []byte { return binary.BigEndian.AppendUint16(p.b, 0xffff) }

func be16(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func bef4(v float32) []byte {
	return binary.BigEndian.AppendUint32(nil, math.Float32bits(v))
}
func bef8(v float64) []byte {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v))
}

// pgArray is PostgreSQL's binary array form of elements of type oid, each
// already encoded.
func pgArray(oid uint32, dims []int32, elems ...[]byte) []byte {
	b := be32(int32(len(dims)))
	b = append(b, be32(0)...)
	b = binary.BigEndian.AppendUint32(b, oid)
	for _, d := range dims {
		b = append(b, be32(d)...)
		b = append(b, be32(1)...)
	}
	for _, e := range elems {
		b = append(b, be32(int32(len(e)))...)
		b = append(b, e...)
	}
	return b
}

func pgVector(vals ...float32) []byte {
	b := append(be16(int16(len(vals))), 0, 0)
	for _, v := range vals {
		b = append(b, bef4(v)...)
	}
	return b
}

func TestCopyFromBinary(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, `CREATE TABLE t (a int2, b int4, c int8, d float4, e float8, f bool, g text, h varchar(5),
		i bytea, j json, k jsonb, v vector(2), m uint8[2][2], r float16[], x bigint[1], id serial)`)
	data := newPGCopy().
		tuple(be16(-2), be32(1<<30), be64(-1<<40), bef4(1.5), bef8(-2.25), []byte{1}, []byte("héllo"), []byte("abc"),
			[]byte{0, 1, 0xff}, []byte(`{"b":1,  "a":2}`), append([]byte{1}, `{"b":1,  "a":2}`...), pgVector(1, -0.5),
			pgArray(21, []int32{2, 2}, be16(0), be16(1), be16(254), be16(255)),
			pgArray(700, []int32{3}, bef4(0.5), bef4(-1), bef4(65504)),
			pgArray(20, []int32{1}, be64(math.MaxInt64))).
		tuple(nil, nil, nil, nil, nil, []byte{0}, []byte(""), nil, []byte{}, nil, nil, nil, nil,
			pgArray(700, nil), nil).
		end()
	tag, err := copyFrom(t, conn, "COPY t (a, b, c, d, e, f, g, h, i, j, k, v, m, r, x) FROM STDIN (FORMAT binary)", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY 2" {
		t.Errorf("tag = %q", tag)
	}
	want := `-2|1073741824|-1099511627776|1.5|-2.25|t|héllo|abc|\x0001ff|{"b":1,  "a":2}|{"a": 2, "b": 1}|[1,-0.5]|{{0,1},{254,255}}|{0.5,-1,65504}|{9223372036854775807}|1
NULL|NULL|NULL|NULL|NULL|f||NULL|\x|NULL|NULL|NULL|NULL|{}|NULL|2`
	if got := queryText(t, conn, "SELECT * FROM t ORDER BY id"); got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
	// WITH BINARY, the older spelling, and no trailer.
	data = newPGCopy().tuple(be16(9), nil, nil, nil, nil, []byte{1}).b
	if _, err := copyFrom(t, conn, "COPY t (a, b, c, d, e, f) FROM STDIN WITH BINARY", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := queryText(t, conn, "SELECT a, f FROM t WHERE a = 9"); got != "9|t" {
		t.Errorf("row = %q", got)
	}
}

// rowGenerator produces the text rows "i\tname i\ti*0.5\n" for i in
// [0, n) as they are read, never holding more than one row.
type rowGenerator struct {
	i, n int
	buf  []byte
}

func (g *rowGenerator) Read(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		if len(g.buf) == 0 {
			if g.i == g.n {
				break
			}
			g.buf = strconv.AppendInt(g.buf[:0], int64(g.i), 10)
			g.buf = append(g.buf, "\tname "...)
			g.buf = strconv.AppendInt(g.buf, int64(g.i), 10)
			g.buf = append(g.buf, '\t')
			g.buf = strconv.AppendFloat(g.buf, float64(g.i)*0.5, 'g', -1, 64)
			g.buf = append(g.buf, '\n')
			g.i++
		}
		n := copy(p[written:], g.buf)
		g.buf = g.buf[n:]
		written += n
	}
	if written == 0 {
		return 0, io.EOF
	}
	return written, nil
}

func TestCopyFromLargeStream(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE big (id int8 PRIMARY KEY, name text, x float8)")
	const n = 200_000
	tag, err := copyFrom(t, conn, "COPY big FROM STDIN", &rowGenerator{n: n})
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY "+strconv.Itoa(n) {
		t.Errorf("tag = %q", tag)
	}
	got := queryText(t, conn, "SELECT count(*), sum(id), min(name), max(x) FROM big")
	if want := fmt.Sprintf("%d|%d|name 0|%g", n, int64(n)*(n-1)/2, float64(n-1)*0.5); got != want {
		t.Errorf("aggregates = %s, want %s", got, want)
	}
}

func TestCopyFromErrors(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE t (a int, b text, c int NOT NULL DEFAULT 5, v vector(2), m uint8[2], j jsonb)")
	tests := []struct {
		name, sql, data  string
		code, msg, where string
	}{
		{"bad integer", "COPY t (a, b) FROM STDIN", "1\tx\nzz\ty\n",
			"22P02", `invalid input syntax for type integer: "zz"`, `COPY t, line 2, column a: "zz"`},
		{"missing column", "COPY t (a, b, c) FROM STDIN", "1\tx\t2\n2\tabc\n",
			"22P04", `missing data for column "c"`, "COPY t, line 2: \"2\tabc\""},
		{"extra column", "COPY t (a, b) FROM STDIN", "1\tx\n2\tabc\t3\t4\n",
			"22P04", "extra data after last expected column", "COPY t, line 2: \"2\tabc\t3\t4\""},
		{"not null", "COPY t (a, c) FROM STDIN", "1\t2\n2\t\\N\n",
			"23502", `null value in column "c" of relation "t" violates not-null constraint`, "COPY t, line 2"},
		{"vector dims", "COPY t (v) FROM STDIN", "[1,2]\n[1,2,3]\n",
			"22000", "expected 2 dimensions, not 3", `COPY t, line 2, column v: "[1,2,3]"`},
		{"tensor range", "COPY t (m) FROM STDIN", "{1,2}\n{1,256}\n",
			"22003", "value 256 is out of range for type uint8", `COPY t, line 2, column m: "{1,256}"`},
		{"bad utf8", "COPY t (b) FROM STDIN", "ok\nbad \xe2\x28\xa1\n",
			"22021", `invalid byte sequence for encoding "UTF8": 0xe2 0x28 0xa1`, "COPY t, line 2"},
		{"nul byte", "COPY t (a) FROM STDIN", "1\n2\x003\n",
			"22021", `invalid byte sequence for encoding "UTF8": 0x00`, "COPY t, line 2"},
		{"escaped bad utf8", "COPY t (b) FROM STDIN", "ok\n\\xff\n",
			"22021", `invalid byte sequence for encoding "UTF8": 0xff`, "COPY t, line 2, column b: \"\uFFFD\""},
		{"escaped nul in an integer", "COPY t (a) FROM STDIN", "1\\0002\n",
			"22P02", "invalid input syntax for type integer: \"1\uFFFD2\"", "COPY t, line 1, column a: \"1\uFFFD2\""},
		{"csv unterminated", "COPY t (a, b) FROM STDIN CSV", "1,x\n2,\"abc\n",
			"22P04", "unterminated CSV quoted field", "COPY t, line 2: \"2,\"abc\n\""},
		{"csv multi-line row counts lines", "COPY t (a, b) FROM STDIN CSV", "1,\"x\ny\"\n2,abc,4\n",
			"22P04", "extra data after last expected column", `COPY t, line 3: "2,abc,4"`},
		{"text row over an escaped newline is one line", "COPY t (b) FROM STDIN", "a\\\nb\tx\n",
			"22P04", "extra data after last expected column", "COPY t, line 1: \"a\\\nb\tx\""},
		{"header mismatch", "COPY t (a, b) FROM STDIN (FORMAT csv, HEADER match)", "a,c\n1,x\n",
			"22P04", `column name mismatch in header line field 2: got "c", expected "b"`, `COPY t, line 1: "a,c"`},
		{"end marker corrupt", "COPY t (a, b) FROM STDIN", "1\tx\n\\.zz\n",
			"22P04", "end-of-copy marker corrupt", "COPY t, line 2"},
		{"long value shortened", "COPY t (a) FROM STDIN", strings.Repeat("9", 150) + "\n",
			"22003", `value "` + strings.Repeat("9", 150) + `" is out of range for type integer`,
			`COPY t, line 1, column a: "` + strings.Repeat("9", 100) + `..."`},
		{"binary signature", "COPY t (a) FROM STDIN BINARY", "PGCOPY\n\xff\r\nX",
			"22P04", "COPY file signature not recognized", ""},
		{"binary field count", "COPY t (a, b) FROM STDIN BINARY", string(newPGCopy().tuple(be32(1)).end()),
			"22P04", "row field count is 1, expected 2", "COPY t, line 1"},
		{"binary int length", "COPY t (a) FROM STDIN BINARY", string(newPGCopy().tuple(be32(1)).tuple(be64(1)).end()),
			"22P03", "incorrect binary data format", "COPY t, line 2, column a"},
		{"binary short", "COPY t (a) FROM STDIN BINARY", string(newPGCopy().tuple(be16(1)).end()),
			"08P01", "insufficient data left in message", "COPY t, line 1, column a"},
		{"binary eof in tuple", "COPY t (a, b) FROM STDIN BINARY", string(newPGCopy().tuple(be32(1), []byte("hi")).b[:30]),
			"22P04", "unexpected EOF in COPY data", "COPY t, line 1, column b"},
		{"binary data after trailer", "COPY t (a) FROM STDIN BINARY", string(append(newPGCopy().tuple(be32(1)).end(), 'x')),
			"22P04", "received copy data after EOF marker", "COPY t, line 2"},
		{"binary element type", "COPY t (m) FROM STDIN BINARY", string(newPGCopy().tuple(pgArray(23, []int32{2}, be32(1), be32(2))).end()),
			"42804", "binary data has array element type 23 (integer) instead of expected 21 (smallint)", "COPY t, line 1, column m"},
		{"binary tensor shape", "COPY t (m) FROM STDIN BINARY", string(newPGCopy().tuple(pgArray(21, []int32{3}, be16(1), be16(2), be16(3))).end()),
			"22000", "tensor shape mismatch: expected [2], got [3]", "COPY t, line 1, column m"},
		{"binary jsonb version", "COPY t (j) FROM STDIN BINARY", string(newPGCopy().tuple([]byte("\x02{}")).end()),
			"22P03", "unsupported jsonb version number 2", "COPY t, line 1, column j"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := copyFrom(t, conn, tt.sql, strings.NewReader(tt.data))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a server error", err)
			}
			if pe.Code != tt.code || pe.Message != tt.msg || pe.Where != tt.where {
				t.Errorf("got %s %q where %q\nwant %s %q where %q", pe.Code, pe.Message, pe.Where, tt.code, tt.msg, tt.where)
			}
			// Nothing of a failed COPY is visible, and the connection goes on.
			if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "0" {
				t.Errorf("rows after failed COPY: %s", got)
			}
		})
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestCopyFromCopyFail(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE t (a int)")
	// pgconn answers a reader's error with CopyFail carrying its text.
	_, err := copyFrom(t, conn, "COPY t FROM STDIN", &failingReader{data: []byte("1\n2\n"), err: errors.New("client gave up")})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || pe.Message != "COPY from stdin failed: client gave up" {
		t.Fatalf("err = %v, want 57014 COPY from stdin failed", err)
	}
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "0" {
		t.Errorf("rows after CopyFail: %s", got)
	}
}

func TestCopyFromTransactions(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE t (a int)")

	// Inside BEGIN the rows belong to the block: ROLLBACK discards them.
	mustExec(t, conn, "BEGIN")
	if _, err := copyFrom(t, conn, "COPY t FROM STDIN", strings.NewReader("1\n2\n")); err != nil {
		t.Fatal(err)
	}
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "2" {
		t.Errorf("block sees %s rows of its COPY", got)
	}
	mustExec(t, conn, "ROLLBACK")
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "0" {
		t.Errorf("%s rows after ROLLBACK", got)
	}

	// A failed COPY aborts the block: 25P02 until ROLLBACK, and its own
	// rows and the block's earlier ones are gone.
	mustExec(t, conn, "BEGIN; INSERT INTO t VALUES (10)")
	if _, err := copyFrom(t, conn, "COPY t FROM STDIN", strings.NewReader("1\nx\n")); err == nil {
		t.Fatal("bad COPY succeeded")
	}
	if conn.TxStatus() != 'E' {
		t.Errorf("TxStatus = %c, want E", conn.TxStatus())
	}
	if _, err := execAll(t, conn, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "25P02") {
		t.Errorf("statement in failed block: %v, want 25P02", err)
	}
	mustExec(t, conn, "ROLLBACK")
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "0" {
		t.Errorf("%s rows after a failed block", got)
	}

	// COMMIT keeps them.
	mustExec(t, conn, "BEGIN")
	if _, err := copyFrom(t, conn, "COPY t FROM STDIN", strings.NewReader("1\n2\n3\n")); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "COMMIT")
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "3" {
		t.Errorf("%s rows after COMMIT, want 3", got)
	}

	// Errors before the data transfer: the client's data is ignored and
	// the connection goes on.
	for _, q := range []string{"COPY nope FROM STDIN", "COPY t (zz) FROM STDIN", "COPY t TO '/tmp/x'", "COPY (SELECT 1) TO PROGRAM 'cat'"} {
		if _, err := copyFrom(t, conn, q, strings.NewReader("1\n")); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	if got := queryText(t, conn, "SELECT count(*) FROM t"); got != "3" {
		t.Errorf("%s rows, want 3", got)
	}
}

// TestRawCopyIn drives the COPY sub-protocol message by message.
func TestRawCopyIn(t *testing.T) {
	ts := startRealServer(t)
	c := rawSession(t, ts)
	c.send(&pgproto3.Query{String: "CREATE TABLE t (a int, b text)"})
	c.expectReady()

	startCopy := func(q string) {
		t.Helper()
		c.send(&pgproto3.Query{String: q})
		m := c.receive()
		cir, ok := m.(*pgproto3.CopyInResponse)
		if !ok {
			t.Fatalf("got %#v, want CopyInResponse", m)
		}
		wantFormat := uint16(0)
		if strings.Contains(q, "binary") {
			wantFormat = 1
		}
		if cir.OverallFormat != byte(wantFormat) || len(cir.ColumnFormatCodes) != 2 ||
			cir.ColumnFormatCodes[0] != wantFormat || cir.ColumnFormatCodes[1] != wantFormat {
			t.Fatalf("CopyInResponse = %+v", cir)
		}
	}

	// Rows split across CopyData messages anywhere; Flush and Sync are
	// ignored during COPY.
	startCopy("COPY t FROM STDIN")
	c.send(&pgproto3.CopyData{Data: []byte("1\tx\n2")}, &pgproto3.Flush{}, &pgproto3.Sync{},
		&pgproto3.CopyData{Data: []byte("\ty")}, &pgproto3.CopyData{Data: []byte("\n")}, &pgproto3.CopyDone{})
	if got := c.expectReady(); !equalStrings(got, []string{"CCOPY 2", "ZI"}) {
		t.Fatalf("COPY answered %v", got)
	}

	// Two COPYs in one query string, one after the other.
	startCopy("COPY t FROM STDIN; COPY t (b, a) FROM STDIN")
	c.send(&pgproto3.CopyData{Data: []byte("10\tp\n")}, &pgproto3.CopyDone{})
	if m, ok := c.receive().(*pgproto3.CommandComplete); !ok || string(m.CommandTag) != "COPY 1" {
		t.Fatalf("got %#v, want COPY 1", m)
	}
	if m, ok := c.receive().(*pgproto3.CopyInResponse); !ok {
		t.Fatalf("got %#v, want the second CopyInResponse", m)
	}
	c.send(&pgproto3.CopyData{Data: []byte("q\t11\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "DELETE FROM t WHERE a >= 10"})
	if got := c.expectReady(); !equalStrings(got, []string{"CCOPY 1", "ZI"}) {
		t.Fatalf("second COPY answered %v", got)
	}
	if got := c.expectReady(); !equalStrings(got, []string{"CDELETE 2", "ZI"}) {
		t.Fatalf("DELETE answered %v", got)
	}

	startCopy("COPY t FROM STDIN (format binary)")
	c.send(&pgproto3.CopyData{Data: newPGCopy().tuple(be32(3), []byte("z")).end()}, &pgproto3.CopyDone{})
	if got := c.expectReady(); !equalStrings(got, []string{"CCOPY 1", "ZI"}) {
		t.Fatalf("binary COPY answered %v", got)
	}

	// Another message during COPY is a protocol violation: the COPY
	// fails, the connection stays.
	startCopy("COPY t FROM STDIN")
	c.send(&pgproto3.CopyData{Data: []byte("4\tw\n")}, &pgproto3.Query{String: "SELECT 1"})
	if got := c.expectReady(); !equalStrings(got, []string{"E08P01", "ZI"}) {
		t.Fatalf("Query during COPY answered %v", got)
	}
	// What the client still sends of the COPY is ignored.
	c.send(&pgproto3.CopyData{Data: []byte("5\tv\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT count(*) FROM t"})
	if got := c.expectReady(); !equalStrings(got, []string{"T", "D", "CSELECT 1", "ZI"}) {
		t.Fatalf("query after failed COPY answered %v", got)
	}

	// CopyFail.
	startCopy("COPY t FROM STDIN")
	c.send(&pgproto3.CopyData{Data: []byte("6\tu\n")}, &pgproto3.CopyFail{Message: "stop"})
	if got := c.expectReady(); !equalStrings(got, []string{"E57014", "ZI"}) {
		t.Fatalf("CopyFail answered %v", got)
	}

	// Terminate during COPY ends the connection.
	startCopy("COPY t FROM STDIN")
	c.send(&pgproto3.CopyData{Data: []byte("7\tt\n")}, &pgproto3.Terminate{})
	for {
		if _, err := c.fe.Receive(); err != nil {
			break
		}
	}
	c2 := rawSession(t, ts)
	c2.send(&pgproto3.Query{String: "SELECT a FROM t ORDER BY a"})
	if got := c2.expectReady(); !equalStrings(got, []string{"T", "D", "D", "D", "CSELECT 3", "ZI"}) {
		t.Fatalf("rows after COPYs: %v", got)
	}
}

// TestPsqlCopy runs psql's \copy from a file and COPY FROM STDIN fed on
// its standard input.
func TestPsqlCopy(t *testing.T) {
	ts := startRealServer(t)
	if _, stderr, err := runPsql(t, ts, "-c", "CREATE TABLE t (a int, b text, v vector(2))"); err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(file, []byte("a,b,v\n1,\"one, two\",\"[1,2]\"\n2,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runPsql(t, ts, "-c", `\copy t from '`+file+`' with (format csv, header)`)
	if err != nil || stdout != "COPY 2\n" {
		t.Fatalf("\\copy: %q %v\n%s", stdout, err, stderr)
	}

	stdout, stderr, err = runPsqlStdin(t, ts, "COPY t FROM STDIN;\n3\tthree\t[3,3]\n4\t\\N\t\\N\n\\.\nSELECT count(*) FROM t;\n", "-At")
	if err != nil || stdout != "COPY 2\n4\n" {
		t.Fatalf("COPY FROM STDIN: %q %v\n%s", stdout, err, stderr)
	}

	// A bad row: psql prints the error with its context.
	_, stderr, err = runPsqlStdin(t, ts, "COPY t (a) FROM STDIN;\n5\nfive\n\\.\n", "-At")
	if err == nil || !strings.Contains(stderr, `ERROR:  invalid input syntax for type integer: "five"`) ||
		!strings.Contains(stderr, `CONTEXT:  COPY t, line 2, column a: "five"`) {
		t.Fatalf("bad COPY: %v\n%s", err, stderr)
	}
	stdout, _, err = runPsql(t, ts, "-At", "-c", "SELECT a, b, v FROM t ORDER BY a")
	if err != nil || stdout != "1|one, two|[1,2]\n2||\n3|three|[3,3]\n4||\n" {
		t.Fatalf("rows: %q %v", stdout, err)
	}
}

// rawSessionKey starts a raw session and returns it with its
// BackendKeyData.
func rawSessionKey(t *testing.T, ts *testServer) (*rawConn, *pgproto3.BackendKeyData) {
	t.Helper()
	c := dialRaw(t, ts)
	c.writeRaw(packet(pgproto3.ProtocolVersion30, startupBody("user", "u")))
	var key pgproto3.BackendKeyData
	for {
		switch m := c.receive().(type) {
		case *pgproto3.BackendKeyData:
			key = *m
		case *pgproto3.ReadyForQuery:
			return c, &key
		}
	}
}

// startStalledCopy begins a COPY on c and sends one row but no CopyDone,
// as a client that stalls.
func startStalledCopy(t *testing.T, c *rawConn) {
	t.Helper()
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	if m, ok := c.receive().(*pgproto3.CopyInResponse); !ok {
		t.Fatalf("got %#v, want CopyInResponse", m)
	}
	c.send(&pgproto3.CopyData{Data: []byte("1\n")})
}

// A CancelRequest ends a COPY that waits for a stalled client; the
// connection stays usable.
func TestCopyFromCanceled(t *testing.T) {
	ts := startRealServer(t)
	c, key := rawSessionKey(t, ts)
	c.send(&pgproto3.Query{String: "CREATE TABLE t (a int)"})
	c.expectReady()
	startStalledCopy(t, c)

	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body := binary.BigEndian.AppendUint32(nil, key.ProcessID)
	if _, err := nc.Write(packet(codeCancelRequest, append(body, key.SecretKey...))); err != nil {
		t.Fatal(err)
	}
	if got := c.expectReady(); !equalStrings(got, []string{"E57014", "ZI"}) {
		t.Fatalf("canceled COPY answered %v", got)
	}
	// The rest of the COPY is ignored; the connection reads normally again.
	c.send(&pgproto3.CopyData{Data: []byte("2\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT count(*) FROM t"})
	if got := c.expectReady(); !equalStrings(got, []string{"T", "D", "CSELECT 1", "ZI"}) {
		t.Fatalf("query after canceled COPY answered %v", got)
	}
}

// Shutdown does not wait for a stalled COPY: it is canceled, then the
// connection ends with 57P01.
func TestCopyFromShutdown(t *testing.T) {
	ts := startRealServer(t)
	c := rawSession(t, ts)
	c.send(&pgproto3.Query{String: "CREATE TABLE t (a int)"})
	c.expectReady()
	startStalledCopy(t, c)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	if got := c.expectReady(); !equalStrings(got, []string{"E57014", "ZI"}) {
		t.Fatalf("COPY at shutdown answered %v", got)
	}
	c.expectFatal("57P01")
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

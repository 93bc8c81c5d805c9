package wire

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

func copyTo(t *testing.T, conn *pgconn.PgConn, sql string) ([]byte, pgconn.CommandTag) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var buf bytes.Buffer
	tag, err := conn.CopyTo(ctx, &buf, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return buf.Bytes(), tag
}

// roundTripSchema has a column of every type, tensors fixed and ragged.
const roundTripSchema = `(id int, i2 smallint, i8 bigint, f4 real, f8 float8, b bool, s text,
	vc varchar(20), by bytea, j json, jb jsonb, v vector(3), m float32[2][2], r int16[],
	u uint8[3], h float16[2], rr float64[][])`

// roundTripRows fills a table of roundTripSchema: special characters of
// every format, NULLs, empty values, extremes.
const roundTripRows = `INSERT INTO t VALUES
	(1, -32768, 9223372036854775807, 1.5, -0.1, true, E'tab\there\nnew\\back \\N\r,"q"''',
	 'x|y;z', '\x00ff5c0a09', '{"a": [1, 2]}', '{"b":1,"a":"\\."}', '[1,2,3]', '{{1,2},{3,4}}',
	 '{5,6,7}', '{0,128,255}', '{0.5,-2}', '{{1.5},{2.5}}'),
	(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(3, 32767, -9223372036854775808, '-Infinity', 'NaN', false, '', E'\\.', '', '"x"', '[]',
	 '[0.25,-1,1e-3]', '{{0,0},{0,0}}', '{}', '{1,2,3}', '{1,1}', '{}'),
	(4, 0, 0, 3.4028235e38, 1e-300, true, 'nil', 'NULL', '\x5c4e', 'null', '{}', '[1,1,1]',
	 '{{-1,1e10},{1e-10,3}}', '{-1}', '{9,9,9}', '{65504,-0}', '{{1,2,3}}')`

// TestCopyToRoundTrip copies a table out in each format and back into a
// fresh table, which must then hold the same rows.
func TestCopyToRoundTrip(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE t "+roundTripSchema)
	mustExec(t, conn, roundTripRows)
	want := queryText(t, conn, "SELECT * FROM t ORDER BY id")
	for i, opts := range []string{
		"",
		"(FORMAT text, HEADER, DELIMITER '|', NULL 'nil!')",
		"(FORMAT csv)",
		"(FORMAT csv, HEADER, DELIMITER ';', NULL 'NULL', QUOTE '''', ESCAPE '\\')",
		"(FORMAT csv, FORCE_QUOTE *)",
		"(FORMAT binary)",
	} {
		data, tag := copyTo(t, conn, "COPY t TO STDOUT "+opts)
		if tag.String() != "COPY 4" {
			t.Errorf("%s: tag %q", opts, tag)
		}
		name := "t" + string(rune('a'+i))
		mustExec(t, conn, "CREATE TABLE "+name+" "+roundTripSchema)
		from := strings.Replace(opts, "FORCE_QUOTE *", "HEADER false", 1)
		if _, err := copyFrom(t, conn, "COPY "+name+" FROM STDIN "+from, bytes.NewReader(data)); err != nil {
			t.Fatalf("%s: copy back: %v\n%q", opts, err, data)
		}
		if got := queryText(t, conn, "SELECT * FROM "+name+" ORDER BY id"); got != want {
			t.Errorf("%s: rows after the round trip:\n%s\nwant:\n%s\ndata: %q", opts, got, want, data)
		}
	}

	// A query, and a column list.
	data, tag := copyTo(t, conn, "COPY (SELECT id, s, id * 2 AS twice FROM t WHERE id < 3 ORDER BY id DESC) TO STDOUT WITH (FORMAT csv, HEADER)")
	if want := "id,s,twice\n2,,4\n1,\"tab\there\nnew\\back \\N\r,\"\"q\"\"'\",2\n"; string(data) != want || tag.String() != "COPY 2" {
		t.Errorf("query: %q %s\nwant %q", data, tag, want)
	}
	data, _ = copyTo(t, conn, "COPY t (vc, id) TO STDOUT")
	if want := "x|y;z\t1\n\\N\t2\n\\\\.\t3\nNULL\t4\n"; string(data) != want {
		t.Errorf("column list: %q, want %q", data, want)
	}
	// No rows: the binary header and trailer only.
	data, tag = copyTo(t, conn, "COPY (SELECT id FROM t WHERE id > 10) TO STDOUT (FORMAT binary)")
	if want := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff"; string(data) != want || tag.String() != "COPY 0" {
		t.Errorf("empty binary: %q %s", data, tag)
	}
}

// TestCopyToFormats checks the bytes of each format against what
// PostgreSQL 15 writes for the same values (copyto.c's rules).
func TestCopyToFormats(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE s (a int, b text, c float8, d bool, e bytea)")
	mustExec(t, conn, `INSERT INTO s VALUES (1, E'a\tb\\c\nd\re\bf\fg\vh', 0.1, true, '\x01ff'),
		(NULL, NULL, NULL, NULL, NULL), (-2, '', 1e100, false, ''), (3, 'x,"y"', '-0', NULL, NULL), (4, E'\\.', 'Infinity', true, '\x5c')`)
	for _, tc := range []struct{ opts, want string }{
		{"", "1\ta\\tb\\\\c\\nd\\re\\bf\\fg\\vh\t0.1\tt\t\\\\x01ff\n" +
			"\\N\t\\N\t\\N\t\\N\t\\N\n" +
			"-2\t\t1e+100\tf\t\\\\x\n" +
			"3\tx,\"y\"\t-0\t\\N\t\\N\n" +
			"4\t\\\\.\tInfinity\tt\t\\\\x5c\n"},
		{"(HEADER, DELIMITER ',', NULL '')", "a,b,c,d,e\n" +
			"1,a\\tb\\\\c\\nd\\re\\bf\\fg\\vh,0.1,t,\\\\x01ff\n" +
			",,,,\n" +
			"-2,,1e+100,f,\\\\x\n" +
			"3,x\\,\"y\",-0,,\n" +
			"4,\\\\.,Infinity,t,\\\\x5c\n"},
		{"(FORMAT csv)", "1,\"a\tb\\c\nd\re\bf\fg\vh\",0.1,t,\\x01ff\n" +
			",,,,\n" +
			"-2,\"\",1e+100,f,\\x\n" +
			"3,\"x,\"\"y\"\"\",-0,,\n" +
			"4,\\.,Infinity,t,\\x5c\n"},
		{"(FORMAT csv, HEADER, NULL 'NULL', QUOTE '''', ESCAPE '!', FORCE_QUOTE (b, d))", "a,b,c,d,e\n" +
			"1,'a\tb\\c\nd\re\bf\fg\vh',0.1,'t',\\x01ff\n" +
			"NULL,NULL,NULL,NULL,NULL\n" +
			"-2,'',1e+100,'f',\\x\n" +
			"3,'x,\"y\"',-0,NULL,NULL\n" +
			"4,'\\.',Infinity,'t',\\x5c\n"},
	} {
		data, _ := copyTo(t, conn, "COPY s TO STDOUT "+tc.opts)
		if string(data) != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.opts, data, tc.want)
		}
	}
	// A single column: \. alone is quoted in CSV, so it is not read as the
	// end of the data.
	data, _ := copyTo(t, conn, "COPY (SELECT b FROM s WHERE a = 4) TO STDOUT (FORMAT csv)")
	if string(data) != "\"\\.\"\n" {
		t.Errorf("single \\.: %q", data)
	}
	data, _ = copyTo(t, conn, "COPY (SELECT a, d, e FROM s WHERE a IN (1, 3) ORDER BY a) TO STDOUT (FORMAT binary)")
	want := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x03" + "\x00\x00\x00\x04\x00\x00\x00\x01" + "\x00\x00\x00\x01\x01" + "\x00\x00\x00\x02\x01\xff" +
		"\x00\x03" + "\x00\x00\x00\x04\x00\x00\x00\x03" + "\xff\xff\xff\xff" + "\xff\xff\xff\xff" +
		"\xff\xff"
	if string(data) != want {
		t.Errorf("binary:\n got %q\nwant %q", data, want)
	}
}

// TestRawCopyOut checks the messages: CopyOutResponse with the format of
// every column, one CopyData per row (the binary header with the first,
// the trailer alone), CopyDone, CommandComplete.
func TestRawCopyOut(t *testing.T) {
	ts := startRealServer(t)
	c := rawSession(t, ts)
	c.send(&pgproto3.Query{String: "CREATE TABLE t (a int, b text); INSERT INTO t VALUES (1, 'x'), (2, NULL)"})
	c.expectReady()
	for _, tc := range []struct {
		q      string
		format byte
		ncols  int
		data   []string
	}{
		{"COPY t TO STDOUT", 0, 2, []string{"1\tx\n", "2\t\\N\n"}},
		{"COPY t (b) TO STDOUT (FORMAT csv, HEADER)", 0, 1, []string{"b\n", "x\n", "\n"}},
		{"COPY t TO STDOUT (FORMAT binary)", 1, 2, []string{
			"PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00" + "\x00\x02\x00\x00\x00\x04\x00\x00\x00\x01\x00\x00\x00\x01x",
			"\x00\x02\x00\x00\x00\x04\x00\x00\x00\x02\xff\xff\xff\xff",
			"\xff\xff"}},
	} {
		c.send(&pgproto3.Query{String: tc.q})
		cor, ok := c.receive().(*pgproto3.CopyOutResponse)
		if !ok || cor.OverallFormat != tc.format || len(cor.ColumnFormatCodes) != tc.ncols {
			t.Fatalf("%s: %#v", tc.q, cor)
		}
		for _, f := range cor.ColumnFormatCodes {
			if f != uint16(tc.format) {
				t.Errorf("%s: column formats %v", tc.q, cor.ColumnFormatCodes)
			}
		}
		for _, want := range tc.data {
			m, ok := c.receive().(*pgproto3.CopyData)
			if !ok || string(m.Data) != want {
				t.Fatalf("%s: got %#v, want CopyData %q", tc.q, m, want)
			}
		}
		if m, ok := c.receive().(*pgproto3.CopyDone); !ok {
			t.Fatalf("%s: got %#v, want CopyDone", tc.q, m)
		}
		if got := c.expectReady(); !equalStrings(got, []string{"CCOPY 2", "ZI"}) {
			t.Errorf("%s: %v", tc.q, got)
		}
	}
	// An error while rows are going out ends the COPY with an
	// ErrorResponse and no CopyDone, as in PostgreSQL.
	c.send(&pgproto3.Query{String: "COPY (SELECT 10 / (a - 2) FROM t ORDER BY a) TO STDOUT"})
	if _, ok := c.receive().(*pgproto3.CopyOutResponse); !ok {
		t.Fatal("no CopyOutResponse")
	}
	if got := c.expectReadyAfterCopy(); !equalStrings(got, []string{"E22012", "ZI"}) {
		t.Errorf("error during COPY: %v", got)
	}
	// The connection goes on.
	c.send(&pgproto3.Query{String: "SELECT count(*) FROM t"})
	if got := c.expectReady(); !equalStrings(got, []string{"T", "D", "CSELECT 1", "ZI"}) {
		t.Errorf("after: %v", got)
	}
}

// expectReadyAfterCopy skips CopyData messages and reads up to
// ReadyForQuery.
func (c *rawConn) expectReadyAfterCopy() []string {
	c.t.Helper()
	var seen []string
	for {
		switch m := c.receive().(type) {
		case *pgproto3.CopyData:
		case *pgproto3.CopyDone:
			seen = append(seen, "c")
		case *pgproto3.ErrorResponse:
			seen = append(seen, "E"+m.Code)
		case *pgproto3.CommandComplete:
			seen = append(seen, "C"+string(m.CommandTag))
		case *pgproto3.ReadyForQuery:
			return append(seen, "Z"+string(m.TxStatus))
		default:
			seen = append(seen, "?")
		}
	}
}

// TestPsqlCopyTo runs psql's \copy to a file and COPY (query) TO STDOUT.
func TestPsqlCopyTo(t *testing.T) {
	ts := startRealServer(t)
	if _, stderr, err := runPsql(t, ts, "-c", "CREATE TABLE t (a int, b text, v vector(2))",
		"-c", "INSERT INTO t VALUES (1, 'one, two', '[1,2]'), (2, NULL, NULL), (3, E'tab\\there', '[3,3]')"); err != nil {
		t.Fatalf("psql: %v\n%s", err, stderr)
	}
	file := filepath.Join(t.TempDir(), "out.csv")
	stdout, stderr, err := runPsql(t, ts, "-c", `\copy t to '`+file+`' with (format csv, header)`)
	if err != nil || stdout != "COPY 3\n" {
		t.Fatalf("\\copy: %q %v\n%s", stdout, err, stderr)
	}
	got, err := os.ReadFile(file)
	if want := "a,b,v\n1,\"one, two\",\"[1,2]\"\n2,,\n3,tab\there,\"[3,3]\"\n"; err != nil || string(got) != want {
		t.Errorf("file: %q %v, want %q", got, err, want)
	}
	stdout, stderr, err = runPsql(t, ts, "-c", "COPY (SELECT a, b FROM t ORDER BY a DESC) TO STDOUT")
	if want := "3\ttab\\there\n2\t\\N\n1\tone, two\n"; err != nil || stdout != want {
		t.Errorf("COPY TO STDOUT: %q %v, want %q\n%s", stdout, err, want, stderr)
	}
	// \copy back in reproduces the table.
	if _, stderr, err := runPsql(t, ts, "-c", "CREATE TABLE u (a int, b text, v vector(2))",
		"-c", `\copy u from '`+file+`' with (format csv, header)`); err != nil {
		t.Fatalf("\\copy from: %v\n%s", err, stderr)
	}
	a, _, _ := runPsql(t, ts, "-At", "-c", "SELECT * FROM t ORDER BY a")
	b, _, _ := runPsql(t, ts, "-At", "-c", "SELECT * FROM u ORDER BY a")
	if a != b || a == "" {
		t.Errorf("after \\copy round trip:\n%s\nwant:\n%s", b, a)
	}
}

// streamComparer checks a stream against what want produces, as it arrives.
type streamComparer struct {
	want     io.Reader
	buf      []byte
	n        int64
	mismatch bool
}

func (c *streamComparer) Write(p []byte) (int, error) {
	if len(c.buf) < len(p) {
		c.buf = make([]byte, len(p))
	}
	n, _ := io.ReadFull(c.want, c.buf[:len(p)])
	if !bytes.Equal(c.buf[:n], p) {
		c.mismatch = true
	}
	c.n += int64(len(p))
	return len(p), nil
}

// TestCopyToLargeStream copies out more rows than one batch or one
// output buffer holds, and reads them back.
func TestCopyToLargeStream(t *testing.T) {
	ts := startRealServer(t)
	conn := connectPgconn(t, ts)
	mustExec(t, conn, "CREATE TABLE big (id int8 PRIMARY KEY, name text, x float8)")
	const n = 200_000
	if _, err := copyFrom(t, conn, "COPY big FROM STDIN", &rowGenerator{n: n}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmp := &streamComparer{want: &rowGenerator{n: n}}
	tag, err := conn.CopyTo(ctx, cmp, "COPY (SELECT * FROM big ORDER BY id) TO STDOUT")
	if err != nil || tag.String() != "COPY 200000" || cmp.mismatch || cmp.n < 4_000_000 {
		t.Fatalf("%s %v: mismatch %v after %d bytes", tag, err, cmp.mismatch, cmp.n)
	}
	if extra, _ := io.Copy(io.Discard, cmp.want); extra != 0 {
		t.Errorf("%d bytes missing", extra)
	}
}

// TestRawCopyOutLargeMessage: a CopyData of more than flushThreshold bytes
// goes out straight from the caller's bytes, framed like the small ones,
// between the messages buffered before and after it.
func TestRawCopyOutLargeMessage(t *testing.T) {
	ts := startRealServer(t)
	c := rawSession(t, ts)
	c.send(&pgproto3.Query{String: "CREATE TABLE big (id int, s text); INSERT INTO big VALUES (1, 'head'), (2, '" +
		strings.Repeat("ab", 100000) + "'), (3, 'tail')"})
	if got := c.expectReady(); !equalStrings(got, []string{"CCREATE TABLE", "CINSERT 0 3", "ZI"}) {
		t.Fatalf("setup: %v", got)
	}
	c.send(&pgproto3.Query{String: "COPY (SELECT s FROM big ORDER BY id) TO STDOUT"})
	if _, ok := c.receive().(*pgproto3.CopyOutResponse); !ok {
		t.Fatal("no CopyOutResponse")
	}
	for _, want := range []string{"head\n", strings.Repeat("ab", 100000) + "\n", "tail\n"} {
		m := c.receive()
		d, ok := m.(*pgproto3.CopyData)
		if !ok {
			t.Fatalf("%#v, want CopyData", m)
		}
		if string(d.Data) != want {
			t.Fatalf("CopyData of %d bytes, want %d", len(d.Data), len(want))
		}
	}
	if got := c.expectReady(); !equalStrings(got, []string{"?", "CCOPY 3", "ZI"}) {
		t.Fatalf("after the data: %v", got)
	}
}

package wire

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/pgtest"
)

// startPostgres15 starts a throwaway PostgreSQL 15 server
// (internal/pgtest) and returns a connection to it.
func startPostgres15(t *testing.T) *pgconn.PgConn {
	t.Helper()
	port := pgtest.Start15(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, "host=127.0.0.1 port="+port+" user=postgres dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestCopyToMatchesPostgres15 copies the same tables (scalar types, and
// ragged tensors, which PostgreSQL sees as arrays) out of deeplaked and out
// of PostgreSQL 15, in every format, and compares the bytes.
func TestCopyToMatchesPostgres15(t *testing.T) {
	pg := startPostgres15(t)
	ts := startRealServer(t)
	dl := connectPgconn(t, ts)
	for _, q := range []string{
		"CREATE TABLE s (id int, i2 smallint, i4 int, i8 bigint, f4 real, f8 float8, b bool, txt text, vc varchar(10), by bytea, j json, jb jsonb)",
		`INSERT INTO s VALUES
			(1, 1, 1, 1, 1.5, 0.1, true, E'a\tb\\c\nd\re\bf\fg\x0bh|', 'x|y', '\x01ff5c', '{"a": [1, 2]}', '{"b":1,"a":"x"}'),
			(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(3, -32768, -2147483648, -9223372036854775808, '-Infinity', 'NaN', false, '', E'\\.', '', '"x"', '[]'),
			(4, 32767, 2147483647, 9223372036854775807, '3.4028235e38', '1e-300', true, E'x,"y"''', 'NULL', '\x', 'null', '{"a":{"b":[1,2.5]}}'),
			(5, 0, 0, 0, '-0', '-0', false, E'\\N', E'\\.', '\x5c4e', '[1, "\\u00e9"]', '{"k": "é\n"}'),
			(6, 7, 8, 9, '1e-45', '123456789.125', true, 'Ω ünïcode', '', '\x00', '{}', '-1.25e3')`,
	} {
		mustExec(t, pg, q)
		mustExec(t, dl, q)
	}
	// Tensors are PostgreSQL arrays to clients: the same DDL makes
	// ragged tensors here and arrays there.
	for _, q := range []string{
		"CREATE TABLE a (id int, x int4[], y float8[][], z int2[], w bool[], v float4[])",
		`INSERT INTO a VALUES (1, '{1,-2,3}', '{{1.5,2},{-0.25,1e300}}', '{7}', '{t,f}', '{0.1,-1e-45}'),
			(2, '{}', '{}', NULL, '{}', '{1}'), (3, NULL, '{{1}}', '{1,2,3,4,5}', '{t}', '{3.4028235e38}')`,
	} {
		mustExec(t, pg, q)
		mustExec(t, dl, q)
	}
	for _, q := range []string{
		"COPY a TO STDOUT",
		"COPY a TO STDOUT (FORMAT csv, HEADER)",
		"COPY a TO STDOUT (FORMAT binary)",
		"COPY s TO STDOUT",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT (HEADER, DELIMITER '|', NULL '')",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT (FORMAT csv)",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT (FORMAT csv, HEADER, DELIMITER '|', NULL 'NULL', QUOTE '''', ESCAPE '!', FORCE_QUOTE (txt, b, i4))",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT (FORMAT csv, FORCE_QUOTE *)",
		"COPY (SELECT vc FROM s ORDER BY id) TO STDOUT (FORMAT csv)",
		"COPY (SELECT vc AS \"a,b\" FROM s ORDER BY id) TO STDOUT (FORMAT csv, HEADER)",
		"COPY s (txt, id) TO STDOUT (FORMAT text, HEADER)",
		"COPY (SELECT * FROM s ORDER BY id) TO STDOUT (FORMAT binary)",
		"COPY (SELECT id FROM s WHERE id > 100) TO STDOUT (FORMAT binary)",
	} {
		want, wantTag := copyTo(t, pg, q)
		got, gotTag := copyTo(t, dl, q)
		if !bytes.Equal(got, want) || gotTag.String() != wantTag.String() {
			t.Errorf("%s:\n got %q (%s)\nwant %q (%s)", q, got, gotTag, want, wantTag)
		}
	}
}

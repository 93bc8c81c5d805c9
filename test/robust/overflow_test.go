package robust

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/pgtest"
	"github.com/deeplaked/deeplaked/internal/proctest"
	"github.com/deeplaked/deeplaked/test/sqllogic"
)

// Result formats of the extended protocol.
const (
	ovTextFormat   = 0
	ovBinaryFormat = 1
)

// TestOverflowTextAndBinary replays the negation probes: -(INT8_MIN) was
// returned and stored as INT8_MIN, and -(INT4_MIN) was 2147483648 in text
// but -2147483648 in binary. Each must be 22003 in the simple protocol and
// in the extended protocol with text and with binary results, on
// constants, on a binary parameter and on a stored column, and nothing
// may be stored.
func TestOverflowTextAndBinary(t *testing.T) {
	srv := proctest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, srv.DSN("postgres", "", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	mustExec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	mustExec("CREATE TABLE ov (b int8, i int4)")
	mustExec("INSERT INTO ov VALUES (-9223372036854775808, -2147483648)")

	// wantRange runs sql in the simple protocol and in the extended
	// protocol with each result format, with params given in binary.
	wantRange := func(sql string, params [][]byte, oids []uint32) {
		t.Helper()
		if params == nil {
			_, err := conn.Exec(ctx, sql).ReadAll()
			ovCheckCode(t, sql+" (simple)", err, "22003")
		}
		pf := make([]int16, len(params))
		for i := range pf {
			pf[i] = ovBinaryFormat
		}
		for _, rf := range []int16{ovTextFormat, ovBinaryFormat} {
			res := conn.ExecParams(ctx, sql, params, oids, pf, []int16{rf}).Read()
			ovCheckCode(t, sql+ovFormatName(rf), res.Err, "22003")
		}
	}
	for _, sql := range []string{
		"SELECT -((-9223372036854775808)::int8)",
		"SELECT -((-2147483648)::int4)",
		"SELECT abs((-2147483648)::int4)",
		"SELECT (-2147483648)::int4 / -1",
		"SELECT 2147483647::int4 + 1",
		"SELECT -b FROM ov",
		"SELECT -i FROM ov",
		"SELECT i - 1 FROM ov",
		"SELECT b * -1 FROM ov",
		"INSERT INTO ov (b) VALUES (-((-9223372036854775808)::int8))",
		"INSERT INTO ov (i) VALUES (-((-2147483648)::int4))",
		"INSERT INTO ov SELECT -b, -i FROM ov",
		"UPDATE ov SET i = -i",
	} {
		wantRange(sql, nil, nil)
	}
	minInt4 := binary.BigEndian.AppendUint32(nil, 1<<31)
	minInt8 := binary.BigEndian.AppendUint64(nil, 1<<63)
	wantRange("SELECT -$1::int4", [][]byte{minInt4}, []uint32{23})
	wantRange("SELECT -$1::int8", [][]byte{minInt8}, []uint32{20})
	wantRange("INSERT INTO ov (i) VALUES (-$1::int4)", [][]byte{minInt4}, []uint32{23})

	// Nothing was stored, and the stored bounds read back the same in
	// both formats.
	for _, rf := range []int16{ovTextFormat, ovBinaryFormat} {
		res := conn.ExecParams(ctx, "SELECT b, i, -(i + 1) FROM ov", nil, nil, nil, []int16{rf}).Read()
		if res.Err != nil {
			t.Fatalf("reading ov%s: %v", ovFormatName(rf), res.Err)
		}
		if len(res.Rows) != 1 {
			t.Fatalf("ov has %d rows%s, want 1", len(res.Rows), ovFormatName(rf))
		}
		row := res.Rows[0]
		want := [][]byte{[]byte("-9223372036854775808"), []byte("-2147483648"), []byte("2147483647")}
		if rf == ovBinaryFormat {
			want = [][]byte{minInt8, minInt4, binary.BigEndian.AppendUint32(nil, 1<<31-1)}
		}
		for k := range want {
			if string(row[k]) != string(want[k]) {
				t.Errorf("column %d%s = %x, want %x", k, ovFormatName(rf), row[k], want[k])
			}
		}
	}
	if !srv.Alive() {
		t.Fatalf("server died:\n%s", srv.Log())
	}
}

func ovFormatName(f int16) string {
	if f == ovBinaryFormat {
		return " (binary results)"
	}
	return " (text results)"
}

func ovCheckCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Errorf("%s: got %v, want SQLSTATE %s", what, err, code)
		return
	}
	if pe.Code != code {
		t.Errorf("%s: SQLSTATE %s (%s), want %s", what, pe.Code, pe.Message, code)
	}
}

// TestLimitsMatchPostgres15 runs the sqllogictest file of numeric limits
// against a real PostgreSQL 15 and against the binary: every answer and
// every SQLSTATE in it is PostgreSQL's.
func TestLimitsMatchPostgres15(t *testing.T) {
	f, err := sqllogic.ParseFile("../sqllogic/testdata/limits.test")
	if err != nil {
		t.Fatal(err)
	}
	port := pgtest.Start15(t)
	srv := proctest.Start(t, nil)
	for _, target := range []struct {
		name, dsn string
		engines   []string
	}{
		{"postgresql", "postgres://postgres@127.0.0.1:" + port + "/postgres?sslmode=disable", []string{"postgresql"}},
		{"deeplaked", srv.DSN("postgres", "", "postgres"), []string{"postgresql", "deeplaked"}},
	} {
		t.Run(target.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			conn, err := pgconn.Connect(ctx, target.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			r := sqllogic.Runner{Conn: conn, Engines: target.engines, RecordTimeout: 10 * time.Second}
			res := r.Run(ctx, f)
			for _, fail := range res.Failures {
				t.Error(fail.String())
			}
			if res.Passed < 150 {
				t.Errorf("only %d records passed", res.Passed)
			}
		})
	}
}

package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/types"
)

// rawReal opens a raw protocol connection to a server with real sessions
// and runs setup statements through the simple protocol.
func rawReal(t *testing.T, setup ...string) *rawConn {
	t.Helper()
	ts := startRealServer(t)
	c := rawSession(t, ts)
	for _, q := range setup {
		c.send(&pgproto3.Query{String: q})
		for _, m := range c.expectReady() {
			if m[0] == 'E' {
				t.Fatalf("%s: %s", q, m)
			}
		}
	}
	return c
}

// expectMsgs reads messages up to ReadyForQuery and returns them.
func (c *rawConn) expectMsgs() []pgproto3.BackendMessage {
	c.t.Helper()
	var out []pgproto3.BackendMessage
	for {
		m := c.receive()
		// NB: the frontend reuses its message structs; keep copies of
		// what tests inspect.
		switch m := m.(type) {
		case *pgproto3.DataRow:
			rows := make([][]byte, len(m.Values))
			for i, v := range m.Values {
				if v != nil {
					rows[i] = append([]byte{}, v...)
				}
			}
			out = append(out, &pgproto3.DataRow{Values: rows})
		case *pgproto3.ParameterDescription:
			out = append(out, &pgproto3.ParameterDescription{ParameterOIDs: append([]uint32{}, m.ParameterOIDs...)})
		case *pgproto3.RowDescription:
			rd := &pgproto3.RowDescription{}
			for _, f := range m.Fields {
				f.Name = append([]byte{}, f.Name...)
				rd.Fields = append(rd.Fields, f)
			}
			out = append(out, rd)
		case *pgproto3.ErrorResponse:
			e := *m
			out = append(out, &e)
		case *pgproto3.CommandComplete:
			out = append(out, &pgproto3.CommandComplete{CommandTag: append([]byte{}, m.CommandTag...)})
		case *pgproto3.ReadyForQuery:
			return append(out, &pgproto3.ReadyForQuery{TxStatus: m.TxStatus})
		default:
			out = append(out, m)
		}
	}
}

func TestExtendedDescribeInfersParameterTypes(t *testing.T) {
	c := rawReal(t, "create table t (id bigint primary key, name text, emb vector(3), img uint8[2][2], score real)")
	tests := []struct {
		query string
		oids  []uint32
		cols  []uint32
	}{
		{"select name from t where id = $1", []uint32{types.OIDInt8}, []uint32{types.OIDText}},
		{"select id, emb, img from t where name = $1 and score > $2", []uint32{types.OIDText, types.OIDFloat4},
			[]uint32{types.OIDInt8, types.OIDVector, types.OIDInt2Array}},
		{"insert into t values ($1, $2, $3, $4, $5)", []uint32{types.OIDInt8, types.OIDText, types.OIDVector,
			types.OIDInt2Array, types.OIDFloat4}, nil},
		{"update t set score = $2 where id = $1 returning id", []uint32{types.OIDInt8, types.OIDFloat4}, []uint32{types.OIDInt8}},
		{"delete from t where id in ($1, $2)", []uint32{types.OIDInt8, types.OIDInt8}, nil},
		{"select $1::int4 + 1, $2", []uint32{types.OIDInt4, types.OIDText}, []uint32{types.OIDInt4, types.OIDText}},
		{"select * from t limit $1", []uint32{types.OIDInt8}, []uint32{types.OIDInt8, types.OIDText, types.OIDVector, types.OIDInt2Array, types.OIDFloat4}},
	}
	for _, tc := range tests {
		c.send(&pgproto3.Parse{Query: tc.query}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{})
		msgs := c.expectMsgs()
		if _, ok := msgs[0].(*pgproto3.ParseComplete); !ok {
			t.Fatalf("%s: %#v", tc.query, msgs[0])
		}
		pd := msgs[1].(*pgproto3.ParameterDescription)
		if !equalOIDs(pd.ParameterOIDs, tc.oids) {
			t.Errorf("%s: parameter OIDs %v, want %v", tc.query, pd.ParameterOIDs, tc.oids)
		}
		switch m := msgs[2].(type) {
		case *pgproto3.NoData:
			if tc.cols != nil {
				t.Errorf("%s: NoData, want columns %v", tc.query, tc.cols)
			}
		case *pgproto3.RowDescription:
			var got []uint32
			for _, f := range m.Fields {
				got = append(got, f.DataTypeOID)
			}
			if !equalOIDs(got, tc.cols) {
				t.Errorf("%s: column OIDs %v, want %v", tc.query, got, tc.cols)
			}
		default:
			t.Errorf("%s: %#v after ParameterDescription", tc.query, m)
		}
	}
}

func equalOIDs(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExtendedRowLimitSuspendsPortal(t *testing.T) {
	c := rawReal(t, "create table t (id int)", "insert into t values (1),(2),(3),(4),(5)")
	c.send(
		&pgproto3.Parse{Query: "select id from t order by id"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Sync{},
	)
	got := c.expectReady()
	want := []string{"1", "2", "D", "D", "s", "D", "D", "s", "D", "CSELECT 1", "ZI"}
	if !equalStrings(got, want) {
		t.Fatalf("row-limited executes answered %v, want %v", got, want)
	}
	// INSERT ... RETURNING runs to its end at the first Execute; its rows
	// come in pieces.
	c.send(
		&pgproto3.Parse{Query: "insert into t values (6), (7) returning id"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 1},
		&pgproto3.Execute{MaxRows: 1},
		&pgproto3.Execute{MaxRows: 1},
		&pgproto3.Sync{},
	)
	if got := c.expectReady(); !equalStrings(got, []string{"1", "2", "D", "s", "D", "s", "CINSERT 0 2", "ZI"}) {
		t.Fatalf("row-limited INSERT RETURNING answered %v", got)
	}
	c.send(&pgproto3.Query{String: "delete from t where id > 5"})
	c.expectReady()
	// A portal of a transaction block outlives Sync; the rows come in order.
	c.send(&pgproto3.Query{String: "begin"})
	c.expectReady()
	c.send(
		&pgproto3.Parse{Name: "s", Query: "select id from t where id > $1 order by id"},
		&pgproto3.Bind{DestinationPortal: "cur", PreparedStatement: "s", Parameters: [][]byte{[]byte("1")}},
		&pgproto3.Execute{Portal: "cur", MaxRows: 3},
		&pgproto3.Sync{},
	)
	msgs := c.expectMsgs()
	var ids []string
	for _, m := range msgs {
		if d, ok := m.(*pgproto3.DataRow); ok {
			ids = append(ids, string(d.Values[0]))
		}
	}
	if _, ok := msgs[len(msgs)-2].(*pgproto3.PortalSuspended); !ok || strings.Join(ids, ",") != "2,3,4" {
		t.Fatalf("first fetch: rows %v, messages %v", ids, msgs)
	}
	c.send(&pgproto3.Execute{Portal: "cur", MaxRows: 3}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"D", "CSELECT 1", "ZT"}) {
		t.Fatalf("second fetch answered %v", got)
	}
	c.send(&pgproto3.Query{String: "commit"})
	c.expectReady()
	// In a failed block, statements other than COMMIT and ROLLBACK fail
	// at Parse and Bind with 25P02; ROLLBACK through the extended protocol
	// ends the block.
	c.send(&pgproto3.Query{String: "begin; select 1/0"})
	c.expectReady()
	c.send(&pgproto3.Parse{Name: "one", Query: "select 1"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E25P02", "ZE"}) {
		t.Fatalf("Parse in a failed block answered %v", got)
	}
	c.send(&pgproto3.Parse{Query: "rollback"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"1", "2", "CROLLBACK", "ZI"}) {
		t.Fatalf("ROLLBACK of a failed block answered %v", got)
	}
	// The commit closed the portal.
	c.send(&pgproto3.Execute{Portal: "cur"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E34000", "ZI"}) {
		t.Fatalf("execute after commit answered %v", got)
	}
}

func TestExtendedPipelineIsOneTransaction(t *testing.T) {
	c := rawReal(t, "create table t (id bigint primary key, v text)")
	var msgs []pgproto3.FrontendMessage
	msgs = append(msgs, &pgproto3.Parse{Name: "ins", Query: "insert into t values ($1, $2)"})
	for i := 1; i <= 3; i++ {
		msgs = append(msgs,
			&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte{byte('0' + i)}, []byte("x")}},
			&pgproto3.Execute{})
	}
	msgs = append(msgs, &pgproto3.Sync{})
	c.send(msgs...)
	if got := c.expectReady(); !equalStrings(got, []string{"1", "2", "CINSERT 0 1", "2", "CINSERT 0 1", "2", "CINSERT 0 1", "ZI"}) {
		t.Fatalf("pipeline answered %v", got)
	}
	// A duplicate key in the middle: the error skips the rest up to Sync
	// and rolls back the whole implicit transaction.
	c.send(
		&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte("7"), nil}},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte("1"), nil}},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte("8"), nil}},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	if got := c.expectReady(); !equalStrings(got, []string{"2", "CINSERT 0 1", "2", "E23505", "ZI"}) {
		t.Fatalf("failing pipeline answered %v", got)
	}
	c.send(&pgproto3.Query{String: "select count(*) from t"})
	msgs2 := c.expectMsgs()
	if d := msgs2[1].(*pgproto3.DataRow); string(d.Values[0]) != "3" {
		t.Fatalf("rows after the failed pipeline: %s, want 3", d.Values[0])
	}
	// The statement survives; a bad parameter fails at Bind with 22P02.
	c.send(&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte("x1"), nil}}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E22P02", "ZI"}) {
		t.Fatalf("bad parameter answered %v", got)
	}
	// Errors of the protocol itself.
	c.send(&pgproto3.Parse{Name: "ins", Query: "select 1"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E42P05", "ZI"}) {
		t.Fatalf("duplicate statement answered %v", got)
	}
	c.send(&pgproto3.Bind{PreparedStatement: "nope"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E26000", "ZI"}) {
		t.Fatalf("unknown statement answered %v", got)
	}
	c.send(&pgproto3.Bind{PreparedStatement: "ins", Parameters: [][]byte{[]byte("1")}}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E08P01", "ZI"}) {
		t.Fatalf("wrong parameter count answered %v", got)
	}
	c.send(&pgproto3.Parse{Query: "select 1; select 2"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E42601", "ZI"}) {
		t.Fatalf("two statements answered %v", got)
	}
	c.send(&pgproto3.Parse{Query: "select $2"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"E42P18", "ZI"}) {
		t.Fatalf("unused untyped parameter answered %v", got)
	}
	c.send(&pgproto3.Close{ObjectType: 'S', Name: "ins"}, &pgproto3.Bind{PreparedStatement: "ins"}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"3", "E26000", "ZI"}) {
		t.Fatalf("bind after close answered %v", got)
	}
	// The empty query.
	c.send(&pgproto3.Parse{Query: "-- ping"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"1", "2", "n", "I", "ZI"}) {
		t.Fatalf("empty query answered %v", got)
	}
}

// TestExtendedBinaryFormats sends and reads back every type in binary.
func TestExtendedBinaryFormats(t *testing.T) {
	c := rawReal(t, "create table t (b bool, i2 smallint, i4 int, i8 bigint, f4 real, f8 float8, s text, vc varchar(10), "+
		"by bytea, j json, jb jsonb, v vector(3), tn float32[2][2], tr int16[])")
	be := binary.BigEndian
	f4 := func(f float32) []byte { return be.AppendUint32(nil, math.Float32bits(f)) }
	vec := be.AppendUint16(nil, 3)
	vec = append(vec, 0, 0)
	for _, f := range []float32{1, -2.5, 3} {
		vec = append(vec, f4(f)...)
	}
	arr := func(elemOID uint32, dims []int, elems ...[]byte) []byte {
		b := be.AppendUint32(nil, uint32(len(dims)))
		b = be.AppendUint32(b, 0)
		b = be.AppendUint32(b, elemOID)
		for _, d := range dims {
			b = be.AppendUint32(b, uint32(d))
			b = be.AppendUint32(b, 1)
		}
		for _, e := range elems {
			b = be.AppendUint32(b, uint32(len(e)))
			b = append(b, e...)
		}
		return b
	}
	i2 := func(v int16) []byte { return be.AppendUint16(nil, uint16(v)) }
	values := [][]byte{
		{1}, i2(-7), be.AppendUint32(nil, 1<<31-1), be.AppendUint64(nil, 1<<62), f4(0.5),
		be.AppendUint64(nil, math.Float64bits(-1e300)), []byte("héllo"), []byte("abc"), {0, 1, 0xff},
		[]byte(`{"a": [1, 2]}`), append([]byte{1}, `{"b": 2, "a": 1}`...), vec,
		arr(types.OIDFloat4, []int{2, 2}, f4(1), f4(2), f4(3), f4(4)),
		arr(types.OIDInt2, []int{3}, i2(1), i2(-2), i2(3)),
	}
	c.send(
		&pgproto3.Parse{Query: "insert into t values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: values},
		&pgproto3.Execute{},
		&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: make([][]byte, len(values))},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	if got := c.expectReady(); !equalStrings(got, []string{"1", "t", "n", "2", "CINSERT 0 1", "2", "CINSERT 0 1", "ZI"}) {
		t.Fatalf("binary insert answered %v", got)
	}
	// Read back in binary: the bytes are the ones sent, jsonb normalized.
	c.send(&pgproto3.Parse{Query: "select * from t order by i2 nulls last"},
		&pgproto3.Bind{ResultFormatCodes: []int16{1}}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	msgs := c.expectMsgs()
	rd := msgs[2].(*pgproto3.RowDescription)
	for _, f := range rd.Fields {
		if f.Format != 1 {
			t.Fatalf("column %s described with format %d", f.Name, f.Format)
		}
	}
	row := msgs[3].(*pgproto3.DataRow)
	for i, want := range values {
		if i == 10 {
			want = append([]byte{1}, `{"a": 1, "b": 2}`...)
		}
		if string(row.Values[i]) != string(want) {
			t.Errorf("column %s: got %x, want %x", rd.Fields[i].Name, row.Values[i], want)
		}
	}
	nulls := msgs[4].(*pgproto3.DataRow)
	for i, v := range nulls.Values {
		if v != nil {
			t.Errorf("column %d of the NULL row: %x", i, v)
		}
	}
	// Mixed formats per column, and text parameters.
	c.send(&pgproto3.Parse{Query: "select i4, s, v from t where i8 = $1"},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("4611686018427387904")}, ResultFormatCodes: []int16{0, 1, 0}},
		&pgproto3.Execute{}, &pgproto3.Sync{})
	msgs = c.expectMsgs()
	row = msgs[2].(*pgproto3.DataRow)
	if string(row.Values[0]) != "2147483647" || string(row.Values[1]) != "héllo" || string(row.Values[2]) != "[1,-2.5,3]" {
		t.Fatalf("mixed formats row: %q", row.Values)
	}
	// Bad binary values are errors, not corruption.
	c.send(&pgproto3.Parse{Name: "bad", Query: "insert into t (v, tn) values ($1, $2)"}, &pgproto3.Sync{})
	c.expectReady()
	badVec := append(be.AppendUint16(nil, 2), 0, 0)
	badVec = append(badVec, f4(1)...)
	badVec = append(badVec, f4(float32(math.NaN()))...)
	for _, tc := range []struct {
		v, tn []byte
		code  string
	}{
		{badVec, nil, "E22000"},
		{vec, arr(types.OIDFloat4, []int{2, 2}, f4(1), f4(2), f4(3)), "E08P01"},
		{vec, arr(types.OIDFloat4, []int{3}, f4(1), f4(2), f4(3)), "E22000"},
		{vec, arr(types.OIDInt4, []int{2, 2}, f4(1), f4(2), f4(3), f4(4)), "E42804"},
		{vec[:5], nil, "E08P01"},
	} {
		c.send(&pgproto3.Bind{PreparedStatement: "bad", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{tc.v, tc.tn}},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		if got := c.expectReady(); !equalStrings(got, []string{tc.code, "ZI"}) {
			t.Errorf("bad binary value %x / %x answered %v, want %s", tc.v, tc.tn, got, tc.code)
		}
	}
}

// TestExtendedForeignParameterTypes binds parameters of types clients
// declare for their own values: an int2 against a bigint column, a numeric,
// a float8[] into a vector.
func TestExtendedForeignParameterTypes(t *testing.T) {
	c := rawReal(t, "create table t (id bigint, v vector(2), n float8, tn float32[2])")
	be := binary.BigEndian
	numeric := func(ndigits, weight int16, sign uint16, dscale int16, digits ...int16) []byte {
		b := be.AppendUint16(nil, uint16(ndigits))
		b = be.AppendUint16(b, uint16(weight))
		b = be.AppendUint16(b, sign)
		b = be.AppendUint16(b, uint16(dscale))
		for _, d := range digits {
			b = be.AppendUint16(b, uint16(d))
		}
		return b
	}
	f8arr := be.AppendUint32(nil, 1)
	f8arr = be.AppendUint32(f8arr, 0)
	f8arr = be.AppendUint32(f8arr, types.OIDFloat8)
	f8arr = be.AppendUint32(f8arr, 2)
	f8arr = be.AppendUint32(f8arr, 1)
	for _, f := range []float64{0.5, 2} {
		f8arr = be.AppendUint32(f8arr, 8)
		f8arr = be.AppendUint64(f8arr, math.Float64bits(f))
	}
	c.send(
		&pgproto3.Parse{Query: "insert into t values ($1, $2, $3, $4)",
			ParameterOIDs: []uint32{types.OIDInt2, types.OIDFloat8Arr, 1700, types.OIDFloat8Arr}},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{
			be.AppendUint16(nil, 42), f8arr, numeric(3, 1, 0x4000, 5, 12, 3456, 7800), f8arr}},
		&pgproto3.Execute{},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("43"), []byte("{1,2}"), []byte("1.5"), []byte("{3,4}")}},
		&pgproto3.Execute{},
		&pgproto3.Parse{Name: "q", Query: "select id, v, n, tn from t where id = $1 order by id", ParameterOIDs: []uint32{types.OIDInt2}},
		&pgproto3.Bind{PreparedStatement: "q", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{be.AppendUint16(nil, 42)}},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "q", Parameters: [][]byte{[]byte("43")}},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	msgs := c.expectMsgs()
	pd := msgs[1].(*pgproto3.ParameterDescription)
	if !equalOIDs(pd.ParameterOIDs, []uint32{types.OIDInt2, types.OIDFloat8Arr, 1700, types.OIDFloat8Arr}) {
		t.Fatalf("declared parameter types described as %v", pd.ParameterOIDs)
	}
	var rows []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *pgproto3.DataRow:
			var vals []string
			for _, v := range m.Values {
				vals = append(vals, string(v))
			}
			rows = append(rows, strings.Join(vals, "|"))
		case *pgproto3.ErrorResponse:
			t.Fatalf("error %s: %s", m.Code, m.Message)
		}
	}
	want := []string{"42|[0.5,2]|-123456.78|{0.5,2}", "43|[1,2]|1.5|{3,4}"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestExtendedPgx runs pgx in its default mode, which prepares every
// statement, describes it, and sends and reads binary where it can.
func TestExtendedPgx(t *testing.T) {
	ts := startRealServer(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, connString(ts, "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err = conn.Exec(ctx, "create table items (id bigint primary key, name text, score float8, tags jsonb, emb vector(2), img uint8[2][2])"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		tag, err := conn.Exec(ctx, "insert into items (id, name, score, tags, emb, img) values ($1, $2, $3, $4, $5, $6)",
			i, "item"+strings.Repeat("x", i%3), float64(i)/4, map[string]any{"k": i}, "[1,2]", [][]int16{{1, 2}, {3, int16(i)}})
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
		if tag.String() != "INSERT 0 1" {
			t.Fatalf("insert tag %q", tag)
		}
	}
	var name string
	var score float64
	var img [][]int16
	if err := conn.QueryRow(ctx, "select name, score, img from items where id = $1", int16(7)).Scan(&name, &score, &img); err != nil {
		t.Fatal(err)
	}
	if name != "itemx" || score != 1.75 || len(img) != 2 || img[1][1] != 7 {
		t.Fatalf("row 7: %q %v %v", name, score, img)
	}
	rows, err := conn.Query(ctx, "select id, tags from items where score >= $1 and name like $2 order by id", 10.0, "item%")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var tags map[string]any
		if err := rows.Scan(&id, &tags); err != nil {
			t.Fatal(err)
		}
		if tags["k"] != float64(id) {
			t.Fatalf("tags of %d: %v", id, tags)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) != 11 || ids[0] != 40 {
		t.Fatalf("ids %v, err %v", ids, rows.Err())
	}
	tag, err := conn.Exec(ctx, "update items set score = score + $1 where id <= $2", 1.0, 10)
	if err != nil || tag.String() != "UPDATE 10" {
		t.Fatalf("update: %v %v", tag, err)
	}
	// A batch is a pipeline: statements share one Sync.
	b := &pgx.Batch{}
	for i := 100; i < 110; i++ {
		b.Queue("insert into items (id, name) values ($1, $2)", i, "batch")
	}
	b.Queue("select count(*) from items where name = $1", "batch")
	br := conn.SendBatch(ctx, b)
	for i := 0; i < 10; i++ {
		if _, err := br.Exec(); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := br.QueryRow().Scan(&n); err != nil || n != 10 {
		t.Fatalf("count in batch: %d, %v", n, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	// Errors keep their SQLSTATE and leave the connection usable.
	_, err = conn.Exec(ctx, "insert into items (id) values ($1)", 1)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("duplicate insert: %v", err)
	}
	if err := conn.QueryRow(ctx, "select count(*) from items").Scan(&n); err != nil || n != 60 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestExtendedStatementAfterDDL: a prepared statement whose table changed
// shape fails with PostgreSQL's error, on which pgx prepares it again.
func TestExtendedStatementAfterDDL(t *testing.T) {
	c := rawReal(t, "create table t (a int)")
	c.send(&pgproto3.Parse{Name: "s", Query: "select * from t"}, &pgproto3.Sync{})
	c.expectReady()
	c.send(&pgproto3.Query{String: "drop table t; create table t (a text, b int)"})
	c.expectReady()
	c.send(&pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := c.expectReady(); !equalStrings(got, []string{"2", "E0A000", "ZI"}) {
		t.Fatalf("statement after DDL answered %v", got)
	}
}

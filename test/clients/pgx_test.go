package clients_test

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

const (
	pgxItems = "pgx_items"
	pgxCopy  = "pgx_copy"
	pgxSeq   = "pgx_seq"
)

// item is one row of a client's items or copy table; nil pointers and
// slices are NULL.
type item struct {
	ID        int32
	Name      *string
	Score     *float64
	Payload   []byte
	Embedding vector
	Weights   []float32
	Pixels    [][]int16
}

func ptr[T any](v T) *T { return &v }

var pgxRows = []item{
	{1, ptr("alpha 'quoted' é"), ptr(1.5), []byte{0, 0xff, 0x10}, vector{0.5, 1, 2}, []float32{1.5, -2, 0.25}, [][]int16{{1, 2}, {3, 255}}},
	{ID: 2},
}

var pgxCopyRows = []item{
	{10, ptr("beta"), ptr(-0.5), []byte{1, 2}, vector{1, 2, 3}, []float32{0, 0.5, 1}, [][]int16{{0, 1}, {2, 3}}},
	{ID: 11},
	{12, ptr("gamma\tdelta"), ptr(1e20), []byte{}, vector{-1, 0, 1}, []float32{3, 2, 1}, [][]int16{{255, 0}, {0, 255}}},
}

// runPgx drives pgx v5 in its default mode: the extended protocol with a
// statement cache and binary results for every type it knows, vector
// included once registerVector has taught it the type.
func runPgx(t *testing.T, tg target) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var conn *pgx.Conn
	t.Cleanup(func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	})
	// each step works on a connection; a step that breaks it gets the next
	// step a new one.
	connOK := func() error {
		if conn != nil && !conn.IsClosed() && conn.Ping(ctx) == nil {
			return nil
		}
		var err error
		if conn, err = pgx.Connect(ctx, tg.dsn()); err != nil {
			return err
		}
		// Without it the steps that send or read vectors fail, saying
		// that pgx cannot encode or scan the type.
		if err := registerVector(ctx, conn); err != nil {
			t.Logf("pgx: %v", err)
		}
		return nil
	}
	step := func(fn func() error) func() error {
		return func() error {
			if err := connOK(); err != nil {
				return fmt.Errorf("connect: %w", err)
			}
			return fn()
		}
	}
	return runSteps(t, map[string]func() error{
		"connect": func() error {
			c, err := pgx.Connect(ctx, tg.dsn())
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			if v := c.PgConn().ParameterStatus("server_version"); !strings.HasPrefix(v, "15") {
				return fmt.Errorf("server_version %q, want 15.x", v)
			}
			if err := c.Ping(ctx); err != nil {
				return err
			}
			var n int32
			if err := c.QueryRow(ctx, "SELECT $1::int + 1", 41).Scan(&n); err != nil {
				return err
			}
			if n != 42 {
				return fmt.Errorf("SELECT $1::int + 1 with 41: %d", n)
			}
			return nil
		},
		"create": func() error {
			c, err := pgx.Connect(ctx, tg.dsn())
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			for _, q := range []string{"DROP TABLE IF EXISTS " + pgxItems, "DROP TABLE IF EXISTS " + pgxCopy, tableDDL(tg, pgxItems), tableDDL(tg, pgxCopy)} {
				if _, err := c.Exec(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		},
		"insert": step(func() error {
			for _, r := range pgxRows {
				tag, err := conn.Exec(ctx, "INSERT INTO "+pgxItems+" VALUES ($1, $2, $3, $4, $5, $6, $7)",
					r.ID, r.Name, r.Score, r.Payload, r.Embedding, r.Weights, r.Pixels)
				if err != nil {
					return err
				}
				if tag.String() != "INSERT 0 1" {
					return fmt.Errorf("command tag %q", tag)
				}
			}
			return nil
		}),
		"select": step(func() error {
			got, formats, err := pgxSelect(ctx, conn, pgxItems, "WHERE id <= $1", 2)
			if err != nil {
				return err
			}
			// name is text, which pgx reads in text format; every other
			// column comes in binary.
			if want := []int16{1, 0, 1, 1, 1, 1, 1}; !reflect.DeepEqual(formats, want) {
				return fmt.Errorf("result formats %v, want %v", formats, want)
			}
			return compareItems(got, pgxRows)
		}),
		"cursor": step(func() error {
			for _, q := range []string{"DROP TABLE IF EXISTS " + pgxSeq, seqDDL(pgxSeq)} {
				if _, err := conn.Exec(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			// One pipeline of Bind/Execute per row.
			batch := &pgx.Batch{}
			for n := 1; n <= seqRows; n++ {
				batch.Queue("INSERT INTO "+pgxSeq+" VALUES ($1, $2)", n, fmt.Sprintf("row %d", n))
			}
			if err := conn.SendBatch(ctx, batch).Close(); err != nil {
				return fmt.Errorf("insert batch: %w", err)
			}
			return pgxCursor(ctx, conn)
		}),
		"copy_in": step(func() error {
			// Text format through PgConn, the rows 10-12 of pgxCopyRows.
			tag, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(copyInText), "COPY "+pgxCopy+" FROM STDIN")
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 3 {
				return fmt.Errorf("COPY FROM STDIN: %q", tag)
			}
			// pgx's CopyFrom sends COPY FROM STDIN (FORMAT binary): the same
			// rows with ids 30-32.
			rows := make([][]any, len(pgxCopyRows))
			for i, r := range pgxCopyRows {
				rows[i] = []any{r.ID + 20, r.Name, r.Score, r.Payload, r.Embedding, r.Weights, r.Pixels}
			}
			n, err := conn.CopyFrom(ctx, pgx.Identifier{pgxCopy},
				[]string{"id", "name", "score", "payload", "embedding", "weights", "pixels"}, pgx.CopyFromRows(rows))
			if err != nil {
				return err
			}
			if n != int64(len(rows)) {
				return fmt.Errorf("CopyFrom: %d rows, want %d", n, len(rows))
			}
			for _, first := range []int{10, 30} {
				got, _, err := pgxSelect(ctx, conn, pgxCopy, "WHERE id BETWEEN $1 AND $2", first, first+2)
				if err != nil {
					return err
				}
				want := slices.Clone(pgxCopyRows)
				for i := range want {
					want[i].ID += int32(first - 10)
				}
				if err := compareItems(got, want); err != nil {
					return fmt.Errorf("rows %d-%d: %w", first, first+2, err)
				}
			}
			return nil
		}),
		"copy_out": step(func() error {
			var buf bytes.Buffer
			// What copy_in loaded comes back as it went in.
			if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY (SELECT * FROM "+pgxCopy+" WHERE id BETWEEN 10 AND 12 ORDER BY id) TO STDOUT (FORMAT csv)"); err != nil {
				return err
			}
			if err := expectOutput("COPY TO STDOUT (FORMAT csv)", buf.String(), copyOutCSV); err != nil {
				return err
			}
			buf.Reset()
			if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY (SELECT id, embedding, weights FROM "+pgxCopy+" WHERE id = 10) TO STDOUT (FORMAT binary)"); err != nil {
				return err
			}
			return checkBinaryCopy(buf.Bytes())
		}),
		"catalog": step(func() error {
			rows, err := conn.Query(ctx, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute "+
				"WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", pgxItems)
			if err != nil {
				return err
			}
			var got []string
			for rows.Next() {
				var name, typ string
				if err := rows.Scan(&name, &typ); err != nil {
					return err
				}
				got = append(got, name+" "+typ)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			want := []string{"id integer", "name text", "score double precision", "payload bytea", "embedding vector", "weights real[]", "pixels smallint[]"}
			if len(got) != len(want) {
				return fmt.Errorf("columns %q, want %q", got, want)
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					return fmt.Errorf("columns %q, want %q", got, want)
				}
			}
			// Types by name, as pgvector-go (to_regtype) and pgx's
			// LoadType find them: the vector's OID is the one the
			// embedding column reports, the tensors' array types load.
			var vecOID uint32
			if err := conn.QueryRow(ctx, "SELECT to_regtype('vector')::oid").Scan(&vecOID); err != nil {
				return err
			}
			sd, err := conn.Prepare(ctx, "", "SELECT embedding FROM "+pgxItems)
			if err != nil {
				return err
			}
			if vecOID != sd.Fields[0].DataTypeOID {
				return fmt.Errorf("to_regtype('vector') = %d, the embedding column's type is %d", vecOID, sd.Fields[0].DataTypeOID)
			}
			for name, oid := range map[string]uint32{"_float4": 1021, "float4[]": 1021, "_int2": 1005} {
				typ, err := conn.LoadType(ctx, name)
				if err != nil {
					return fmt.Errorf("LoadType(%q): %w", name, err)
				}
				if typ.OID != oid {
					return fmt.Errorf("LoadType(%q): OID %d, want %d", name, typ.OID, oid)
				}
			}
			return nil
		}),
		"sqlstate": step(func() error {
			var pgErr *pgconn.PgError
			_, err := conn.Exec(ctx, "SELECT * FROM pgx_missing")
			if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
				return fmt.Errorf("simple protocol, missing table: %v, want SQLSTATE 42P01", err)
			}
			_, err = conn.Exec(ctx, "SELECT id FROM pgx_missing WHERE id = $1", 1)
			if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
				return fmt.Errorf("extended protocol, missing table: %v, want SQLSTATE 42P01", err)
			}
			_, err = conn.Exec(ctx, "INSERT INTO "+pgxItems+" (id) VALUES ($1), ($1)", 100)
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
				return fmt.Errorf("duplicate key: %v, want SQLSTATE 23505", err)
			}
			var n int32
			if err := conn.QueryRow(ctx, "SELECT count(*)::int FROM "+pgxItems+" WHERE id = $1", 100).Scan(&n); err != nil || n != 0 {
				return fmt.Errorf("after the errors: %d rows with id 100, %v", n, err)
			}
			return nil
		}),
		"cancel": step(func() error {
			for _, q := range []struct {
				sql  string
				args []any
			}{{"SELECT pg_sleep(30)", nil}, {"SELECT pg_sleep($1)", []any{30.0}}} {
				stop := keepCanceling(conn.PgConn())
				start := time.Now()
				_, err := conn.Exec(ctx, q.sql, q.args...)
				stop()
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
					return fmt.Errorf("%s canceled: %v after %v, want SQLSTATE 57014", q.sql, err, time.Since(start).Round(time.Millisecond))
				}
				var n int32
				if err := conn.QueryRow(ctx, "SELECT $1::int", 7).Scan(&n); err != nil || n != 7 {
					return fmt.Errorf("after cancel: %d, %v", n, err)
				}
			}
			return nil
		}),
	})
}

// pgxCursor reads pgxSeq through SQL cursors in a transaction: DECLARE
// with a parameter in its query (Parse/Bind over the extended protocol),
// then FETCH 100 until no rows come, each FETCH prepared and described by
// pgx's statement cache and read in binary; and a WITH HOLD cursor that is
// read after COMMIT, with MOVE and FETCH ALL.
func pgxCursor(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR SELECT n, label FROM "+pgxSeq+" WHERE n > $1 ORDER BY n", 200); err != nil {
		return fmt.Errorf("DECLARE: %w", err)
	}
	var got []seqRow
	for {
		rows, err := tx.Query(ctx, "FETCH 100 FROM c")
		if err != nil {
			return fmt.Errorf("FETCH: %w", err)
		}
		batch, err := pgx.CollectRows(rows, pgx.RowToStructByPos[seqRow])
		if err != nil {
			return fmt.Errorf("FETCH: %w", err)
		}
		if rows.CommandTag().String() != fmt.Sprintf("FETCH %d", len(batch)) {
			return fmt.Errorf("FETCH: command tag %q after %d rows", rows.CommandTag(), len(batch))
		}
		if len(batch) == 0 {
			break
		}
		got = append(got, batch...)
	}
	if err := expectSeq("DECLARE $1 / FETCH 100", got, 201, seqRows); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "CLOSE c"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DECLARE h CURSOR WITH HOLD FOR SELECT n, label FROM "+pgxSeq+" WHERE n > $1 ORDER BY n", 0); err != nil {
		return fmt.Errorf("DECLARE WITH HOLD: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	tag, err := conn.Exec(ctx, "MOVE 100 IN h")
	if err != nil || tag.String() != "MOVE 100" {
		return fmt.Errorf("MOVE 100 after COMMIT: %q, %v", tag, err)
	}
	rows, err := conn.Query(ctx, "FETCH ALL FROM h")
	if err != nil {
		return fmt.Errorf("FETCH ALL after COMMIT: %w", err)
	}
	got, err = pgx.CollectRows(rows, pgx.RowToStructByPos[seqRow])
	if err != nil {
		return fmt.Errorf("FETCH ALL after COMMIT: %w", err)
	}
	if err := expectSeq("WITH HOLD, MOVE 100, FETCH ALL", got, 101, seqRows); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "CLOSE h")
	return err
}

// keepCanceling sends a CancelRequest for conn 0.5 s from now and every
// second after until stop is called: a cancel that reaches the server
// before the query does is lost, as in PostgreSQL.
func keepCanceling(conn *pgconn.PgConn) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		wait := 500 * time.Millisecond
		for {
			select {
			case <-done:
				return
			case <-time.After(wait):
				conn.CancelRequest(context.Background())
				wait = time.Second
			}
		}
	}()
	return func() { close(done); <-finished }
}

// pgxSelect reads a table's rows in id order with one parameterized query
// and returns them with the result format of each column.
func pgxSelect(ctx context.Context, conn *pgx.Conn, table, where string, args ...any) ([]item, []int16, error) {
	rows, err := conn.Query(ctx, "SELECT id, name, score, payload, embedding, weights, pixels FROM "+table+" "+where+" ORDER BY id", args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var formats []int16
	for _, fd := range rows.FieldDescriptions() {
		formats = append(formats, fd.Format)
	}
	var got []item
	for rows.Next() {
		var r item
		if err := rows.Scan(&r.ID, &r.Name, &r.Score, &r.Payload, &r.Embedding, &r.Weights, &r.Pixels); err != nil {
			return nil, nil, err
		}
		got = append(got, r)
	}
	return got, formats, rows.Err()
}

func compareItems(got, want []item) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d rows, want %d: %s", len(got), len(want), fmtItems(got))
	}
	for i := range want {
		g, w := got[i], want[i]
		// An empty bytea is not NULL; DeepEqual tells []byte{} from nil.
		if !reflect.DeepEqual(g, w) {
			return fmt.Errorf("row %d: got %s, want %s", i, fmtItems(got[i:i+1]), fmtItems(want[i:i+1]))
		}
	}
	return nil
}

func fmtItems(rows []item) string {
	var parts []string
	for _, r := range rows {
		name, score := "NULL", "NULL"
		if r.Name != nil {
			name = strconv.Quote(*r.Name)
		}
		if r.Score != nil {
			score = strconv.FormatFloat(*r.Score, 'g', -1, 64)
		}
		payload := "NULL"
		if r.Payload != nil {
			payload = fmt.Sprintf("%x", r.Payload)
		}
		parts = append(parts, fmt.Sprintf("(%d %s %s %s %v %v %v)", r.ID, name, score, payload, r.Embedding, r.Weights, r.Pixels))
	}
	return strings.Join(parts, ", ")
}

// checkBinaryCopy decodes COPY's binary format for the row
// (10, '[1,2,3]', '{0,0.5,1}').
func checkBinaryCopy(b []byte) error {
	const sig = "PGCOPY\n\xff\r\n\x00"
	if !bytes.HasPrefix(b, []byte(sig)) || len(b) < len(sig)+8 {
		return fmt.Errorf("binary COPY: no PGCOPY header: %q", b)
	}
	b = b[len(sig)+4:]                       // flags
	b = b[4+binary.BigEndian.Uint32(b[:4]):] // header extension
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 3 {
		return fmt.Errorf("binary COPY: want a row of 3 fields: %x", b)
	}
	b = b[2:]
	var fields [][]byte
	for range 3 {
		if len(b) < 4 {
			return fmt.Errorf("binary COPY: truncated row")
		}
		n := int(int32(binary.BigEndian.Uint32(b)))
		if n < 0 || len(b) < 4+n {
			return fmt.Errorf("binary COPY: bad field length %d", n)
		}
		fields = append(fields, b[4:4+n])
		b = b[4+n:]
	}
	if !bytes.Equal(b, []byte{0xff, 0xff}) {
		return fmt.Errorf("binary COPY: want the -1 trailer after one row, have %x", b)
	}
	if !bytes.Equal(fields[0], []byte{0, 0, 0, 10}) {
		return fmt.Errorf("binary COPY: id %x", fields[0])
	}
	var v vector
	if err := v.decodeBinary(fields[1]); err != nil || !reflect.DeepEqual(v, vector{1, 2, 3}) {
		return fmt.Errorf("binary COPY: embedding %x: %v %v", fields[1], v, err)
	}
	m := pgtype.NewMap()
	var w []float32
	if err := m.Scan(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, fields[2], &w); err != nil || !reflect.DeepEqual(w, []float32{0, 0.5, 1}) {
		return fmt.Errorf("binary COPY: weights %x: %v %v", fields[2], w, err)
	}
	return nil
}

// registerVector teaches pgx the vector type under the OID the server
// reports for the items table's embedding column (pgvector's OID differs
// between databases), so that pgx sends and reads it in binary.
func registerVector(ctx context.Context, conn *pgx.Conn) error {
	sd, err := conn.Prepare(ctx, "", "SELECT embedding FROM "+pgxItems)
	if err != nil {
		return fmt.Errorf("describe the vector column: %w", err)
	}
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "vector", OID: sd.Fields[0].DataTypeOID, Codec: vectorCodec{}})
	return nil
}

// vector is a pgvector value; nil is NULL.
type vector []float32

// decodeBinary reads pgvector's binary form: int16 dimensions, int16 0,
// then each element as a float4, all big-endian.
func (v *vector) decodeBinary(src []byte) error {
	if len(src) < 4 {
		return fmt.Errorf("vector: %d bytes", len(src))
	}
	dim := int(binary.BigEndian.Uint16(src))
	if unused := binary.BigEndian.Uint16(src[2:]); unused != 0 || len(src) != 4+4*dim {
		return fmt.Errorf("vector: bad binary value %x", src)
	}
	out := make(vector, dim)
	for i := range out {
		out[i] = math.Float32frombits(binary.BigEndian.Uint32(src[4+4*i:]))
	}
	*v = out
	return nil
}

func (v *vector) decodeText(src []byte) error {
	s := string(src)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return fmt.Errorf("vector: bad text value %q", s)
	}
	out := vector{}
	for _, e := range strings.Split(s[1:len(s)-1], ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(e), 32)
		if err != nil {
			return fmt.Errorf("vector: %w", err)
		}
		out = append(out, float32(f))
	}
	*v = out
	return nil
}

type vectorCodec struct{}

func (vectorCodec) FormatSupported(format int16) bool {
	return format == pgtype.BinaryFormatCode || format == pgtype.TextFormatCode
}

func (vectorCodec) PreferredFormat() int16 { return pgtype.BinaryFormatCode }

func (vectorCodec) PlanEncode(_ *pgtype.Map, _ uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(vector); !ok {
		return nil
	}
	return vectorEncodePlan{format}
}

func (vectorCodec) PlanScan(_ *pgtype.Map, _ uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*vector); !ok {
		return nil
	}
	return vectorScanPlan{format}
}

func (c vectorCodec) DecodeDatabaseSQLValue(m *pgtype.Map, oid uint32, format int16, src []byte) (driver.Value, error) {
	if src == nil {
		return nil, nil
	}
	var v vector
	if err := (vectorScanPlan{format}).Scan(src, &v); err != nil {
		return nil, err
	}
	return fmt.Sprint(v), nil
}

func (c vectorCodec) DecodeValue(m *pgtype.Map, oid uint32, format int16, src []byte) (any, error) {
	if src == nil {
		return nil, nil
	}
	var v vector
	err := (vectorScanPlan{format}).Scan(src, &v)
	return v, err
}

type vectorEncodePlan struct{ format int16 }

func (p vectorEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	v := value.(vector)
	if v == nil {
		return nil, nil
	}
	if p.format == pgtype.TextFormatCode {
		buf = append(buf, '[')
		for i, f := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, float64(f), 'g', -1, 32)
		}
		return append(buf, ']'), nil
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(v)))
	buf = binary.BigEndian.AppendUint16(buf, 0)
	for _, f := range v {
		buf = binary.BigEndian.AppendUint32(buf, math.Float32bits(f))
	}
	return buf, nil
}

type vectorScanPlan struct{ format int16 }

func (p vectorScanPlan) Scan(src []byte, target any) error {
	v := target.(*vector)
	if src == nil {
		*v = nil
		return nil
	}
	if p.format == pgtype.TextFormatCode {
		return v.decodeText(src)
	}
	return v.decodeBinary(src)
}

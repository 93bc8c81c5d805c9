package exec

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

var (
	textOpts = plan.CopyOptions{Format: plan.CopyText, Header: plan.HeaderNone, Delimiter: '\t', Null: `\N`}
	csvOpts  = plan.CopyOptions{Format: plan.CopyCSV, Header: plan.HeaderNone, Delimiter: ',', Quote: '"', Escape: '"'}
)

// testCopy returns a COPY into a table with the given column types, all of
// them targets, whose inserts are recorded.
func testCopy(t *testing.T, opts plan.CopyOptions, ts ...types.Type) (*copyFrom, *[]*types.Batch) {
	t.Helper()
	desc := &storage.TableDesc{Name: "t"}
	n := &plan.CopyFrom{Table: desc, Options: opts}
	for i, typ := range ts {
		desc.Columns = append(desc.Columns, storage.ColumnDesc{Name: "c" + strconv.Itoa(i+1), Type: typ})
		n.Target = append(n.Target, i)
	}
	n.Defaults = make([]plan.Expr, len(ts))
	var inserted []*types.Batch
	cf, err := newCopyFrom(&Env{}, n, func(_ *storage.TableDesc, b *types.Batch) error {
		c := types.NewBatch(desc.ColumnTypes(), b.Len())
		for i, v := range b.Cols {
			c.Cols[i].AppendVec(v)
		}
		inserted = append(inserted, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cf, &inserted
}

// fieldsOf splits line as the reader would and renders the fields, NULL
// as <null>, joined by "|".
func fieldsOf(d *textReader, line string) (string, error) {
	if err := d.split([]byte(line)); err != nil {
		return "", err
	}
	var out []string
	for _, f := range d.fields {
		if f.null {
			out = append(out, "<null>")
		} else {
			out = append(out, string(d.vals[f.start:f.end]))
		}
	}
	return strings.Join(out, "|"), nil
}

func TestCopySplitText(t *testing.T) {
	cf, _ := testCopy(t, textOpts, types.TypText)
	d := newTextReader(cf, nil)
	for _, tc := range []struct{ line, want string }{
		{"", ""},
		{"a\tb", "a|b"},
		{"\t", "|"},
		{`\N` + "\t" + `\\N`, `<null>|\N`},
		{`\Nx`, `Nx`},
		{`a\tb\nc\rd\be\ff\vg`, "a\tb\nc\rd\be\ff\vg"},
		{`\101\60\0601\1010`, "A001A0"},
		{`\x41\x4a\x4\xg\x`, "AJ\x04xgx"},
		{`a\` + "\tb", "a\tb"},
		{`\\\.\q`, `\.q`},
		{`trailing\`, "trailing"},
		{"\u00e9\t\u00fc", "\u00e9|\u00fc"},
	} {
		got, err := fieldsOf(d, tc.line)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	opts := textOpts
	opts.Delimiter, opts.Null = '|', ""
	cf, _ = testCopy(t, opts, types.TypText)
	if got, _ := fieldsOf(newTextReader(cf, nil), `a||\|b|`); got != "a|<null>||b|<null>" {
		t.Errorf("| delimited: %q", got)
	}
}

func TestCopySplitCSV(t *testing.T) {
	cf, _ := testCopy(t, csvOpts, types.TypText)
	d := newTextReader(cf, nil)
	for _, tc := range []struct{ line, want string }{
		{"", "<null>"},
		{",", "<null>|<null>"},
		{`"",""`, "|"},
		{`a,"b,c",d`, "a|b,c|d"},
		{`"say ""hi""",x`, `say "hi"|x`},
		{`"ab"cd,e`, "abcd|e"},
		{`ab"c,d"e`, "abc,de"},
		{"\"two\nlines\"", "two\nlines"},
		{` a , b `, " a | b "},
		{`\N,\.`, `\N|\.`},
	} {
		got, err := fieldsOf(d, tc.line)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
	if _, err := fieldsOf(d, `a,"bc`); pgerror.GetCode(err) != pgerror.BadCopyFileFormat {
		t.Errorf("unterminated quote: %v", err)
	}

	// Another escape; NULL string; a quoted NULL string is not NULL.
	opts := csvOpts
	opts.Escape, opts.Null = '\\', "NULL"
	cf, _ = testCopy(t, opts, types.TypText)
	d = newTextReader(cf, nil)
	if got, _ := fieldsOf(d, `"a\"b\\c\d",NULL,"NULL",""`); got != `a"b\c\d|<null>|NULL|` {
		t.Errorf("escape: %q", got)
	}
}

// readLines reads every logical line of input with a read buffer of
// size bytes.
func readLines(t *testing.T, opts plan.CopyOptions, input string, size int) ([]string, []int64, error) {
	t.Helper()
	cf, _ := testCopy(t, opts, types.TypText)
	d := newTextReader(cf, bufio.NewReaderSize(strings.NewReader(input), size))
	var lines []string
	var nums []int64
	for {
		line, ok, err := d.readLine()
		if err != nil || !ok {
			return lines, nums, err
		}
		lines = append(lines, string(line))
		nums = append(nums, d.line)
	}
}

func TestCopyReadLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name  string
		opts  plan.CopyOptions
		input string
		lines []string
		nums  []int64
	}{
		{"text", textOpts, "a\nb\r\n\nc", []string{"a", "b", "", "c"}, []int64{1, 2, 3, 4}},
		{"escaped newline", textOpts, "a\\\nb\nc\\\\\nd\n", []string{"a\\\nb", `c\\`, "d"}, []int64{1, 2, 3}},
		{"end marker", textOpts, "a\n\\.\nb\n", []string{"a"}, []int64{1}},
		{"end marker after data", textOpts, "a\nb\\.\nc\n", []string{"a", "b"}, []int64{1, 2}},
		{"end marker at the end", textOpts, "a\n\\.", []string{"a"}, []int64{1}},
		{"escaped backslash dot", textOpts, "\\\\.\n", []string{`\\.`}, []int64{1}},
		{"long lines", textOpts, long + "\n" + long + "\\\n" + long, []string{long, long + "\\\n" + long}, []int64{1, 2}},
		{"csv", csvOpts, "a,b\n\"c\nd\",e\nf\n", []string{"a,b", "\"c\nd\",e", "f"}, []int64{1, 3, 4}},
		{"csv doubled quotes", csvOpts, "\"a\"\"\nb\"\nc\n", []string{"\"a\"\"\nb\"", "c"}, []int64{2, 3}},
		{"csv long quoted", csvOpts, "\"" + long + "\n" + long + "\"\nx\n", []string{"\"" + long + "\n" + long + "\"", "x"}, []int64{2, 3}},
		{"csv end marker", csvOpts, "a\n\\.\nb\n", []string{"a"}, []int64{1}},
		{"csv quoted end marker is data", csvOpts, "\"a\n\\.\n\"\nb\n", []string{"\"a\n\\.\n\"", "b"}, []int64{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{16, 4096} {
				lines, nums, err := readLines(t, tc.opts, tc.input, size)
				if err != nil {
					t.Fatalf("buffer %d: %v", size, err)
				}
				if strings.Join(lines, "•") != strings.Join(tc.lines, "•") || len(nums) != len(tc.nums) {
					t.Fatalf("buffer %d: lines %q, want %q", size, lines, tc.lines)
				}
				for i := range nums {
					if nums[i] != tc.nums[i] {
						t.Errorf("buffer %d: line numbers %v, want %v", size, nums, tc.nums)
						break
					}
				}
			}
		})
	}
	if _, _, err := readLines(t, textOpts, "a\n\\.x\n", 4096); pgerror.GetCode(err) != pgerror.BadCopyFileFormat {
		t.Errorf("corrupt end marker: %v", err)
	}
}

// repeatReader yields its row forever.
type repeatReader struct {
	row []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.row[r.off:])
		n += k
		r.off = (r.off + k) % len(r.row)
	}
	return n, nil
}

func TestCopyFlushesInBatches(t *testing.T) {
	// Rows are inserted every copyBatchRows rows ...
	cf, inserted := testCopy(t, textOpts, types.TypInt4, types.TypText)
	var input strings.Builder
	for i := range 2500 {
		input.WriteString(strconv.Itoa(i) + "\tx\n")
	}
	n, err := cf.run(bufio.NewReader(strings.NewReader(input.String())))
	if err != nil || n != 2500 {
		t.Fatalf("run = %d, %v", n, err)
	}
	var sizes []int
	for _, b := range *inserted {
		sizes = append(sizes, b.Len())
	}
	if len(sizes) != 3 || sizes[0] != 1000 || sizes[1] != 1000 || sizes[2] != 500 {
		t.Errorf("batch sizes %v, want [1000 1000 500]", sizes)
	}
	if b := (*inserted)[2]; b.Cols[0].Ints[499] != 2499 || string(b.Cols[1].GetBytes(0)) != "x" {
		t.Errorf("last batch holds %d", b.Cols[0].Ints[499])
	}

	// ... or every copyBatchBytes bytes of input, whichever comes first.
	cf, inserted = testCopy(t, textOpts, types.TypText)
	row := strings.Repeat("y", 1<<20) + "\n"
	if n, err := cf.run(bufio.NewReader(strings.NewReader(strings.Repeat(row, 10)))); err != nil || n != 10 {
		t.Fatalf("run = %d, %v", n, err)
	}
	sizes = sizes[:0]
	for _, b := range *inserted {
		sizes = append(sizes, b.Len())
	}
	if len(sizes) != 3 || sizes[0] != 4 || sizes[1] != 4 || sizes[2] != 2 {
		t.Errorf("batch sizes %v, want [4 4 2]", sizes)
	}
}

func TestCopyDefaultsAndNotNull(t *testing.T) {
	desc := &storage.TableDesc{Name: "t", Columns: []storage.ColumnDesc{
		{Name: "a", Type: types.TypInt4},
		{Name: "b", Type: types.TypInt8, NotNull: true},
		{Name: "c", Type: types.TypText},
	}}
	n := &plan.CopyFrom{Table: desc, Target: []int{2, 0}, Options: textOpts,
		Defaults: []plan.Expr{nil, plan.IntConst(types.TypInt8, 7), nil}}
	var got *types.Batch
	cf, err := newCopyFrom(&Env{}, n, func(_ *storage.TableDesc, b *types.Batch) error {
		got = types.NewBatch(desc.ColumnTypes(), b.Len())
		for i, v := range b.Cols {
			got.Cols[i].AppendVec(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cf.run(bufio.NewReader(strings.NewReader("x\t1\n\\N\t2\n"))); err != nil {
		t.Fatal(err)
	}
	if got.Len() != 2 || got.Cols[0].Ints[1] != 2 || got.Cols[1].Ints[0] != 7 || got.Cols[1].Ints[1] != 7 ||
		string(got.Cols[2].GetBytes(0)) != "x" || !got.Cols[2].Nulls[1] {
		t.Errorf("rows: a=%v b=%v c-nulls=%v", got.Cols[0].Ints, got.Cols[1].Ints, got.Cols[2].Nulls)
	}

	n.Defaults[1] = plan.NullConst(types.TypInt8)
	cf, _ = newCopyFrom(&Env{}, n, func(*storage.TableDesc, *types.Batch) error { return nil })
	_, err = cf.run(bufio.NewReader(strings.NewReader("x\t1\n")))
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != pgerror.NotNullViolation || pe.Where != "COPY t, line 1" {
		t.Errorf("NULL default of a NOT NULL column: %v", err)
	}
}

// binaryValue decodes one binary field into a Vec of type typ and returns
// it as text.
func binaryValue(typ types.Type, b []byte) (string, error) {
	var codec types.BinaryCodec
	v := types.NewVec(typ, 1)
	if err := codec.AppendRecv(v, b); err != nil {
		return "", err
	}
	return string(types.AppendText(nil, v, 0)), nil
}

func arrayBytes(oid uint32, dims []int32, elems ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(dims)))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, oid)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	for _, e := range elems {
		if e == nil {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func i16(v int16) []byte   { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func i32(v int32) []byte   { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func i64(v int64) []byte   { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func f32(v float32) []byte { return binary.BigEndian.AppendUint32(nil, math.Float32bits(v)) }
func f64(v float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(v)) }

func TestCopyBinaryValues(t *testing.T) {
	vec := func(dim int16, unused int16, vals ...float32) []byte {
		b := append(i16(dim), i16(unused)...)
		for _, v := range vals {
			b = append(b, f32(v)...)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		typ  types.Type
		in   []byte
		want string
		code pgerror.Code
	}{
		{"int2", types.TypInt2, i16(-5), "-5", ""},
		{"int4 short", types.TypInt4, i16(1), "", pgerror.ProtocolViolation},
		{"int8 long", types.TypInt8, append(i64(1), 0), "", pgerror.InvalidBinaryRepresentation},
		{"float4", types.TypFloat4, f32(0.1), "0.1", ""},
		{"float8 nan", types.TypFloat8, f64(math.NaN()), "NaN", ""},
		{"bool", types.TypBool, []byte{7}, "t", ""},
		{"varchar too long", types.Type{Kind: types.Varchar, Width: 2}, []byte("abc"), "", pgerror.StringDataRightTrunc},
		{"json invalid", types.TypJSON, []byte("{"), "", pgerror.InvalidTextRepresentation},
		{"jsonb", types.TypJSONB, []byte("\x01[1,  2]"), "[1, 2]", ""},
		{"jsonb empty", types.TypJSONB, nil, "", pgerror.ProtocolViolation},
		{"bytea", types.TypBytea, []byte{0, 0xff}, `\x00ff`, ""},
		{"vector", types.VectorOf(2), vec(2, 0, 1, 2), "[1,2]", ""},
		{"vector any dim", types.VectorOf(0), vec(3, 0, 1, 2, 3), "[1,2,3]", ""},
		{"vector dims", types.VectorOf(2), vec(3, 0, 1, 2, 3), "", pgerror.DataException},
		{"vector unused", types.VectorOf(1), vec(1, 1, 1), "", pgerror.InvalidParameterValue},
		{"vector zero", types.VectorOf(0), vec(0, 0), "", pgerror.DataException},
		{"vector nan", types.VectorOf(1), vec(1, 0, float32(math.NaN())), "", pgerror.DataException},
		{"vector short", types.VectorOf(2), vec(2, 0, 1), "", pgerror.ProtocolViolation},
		{"bool tensor", types.TensorOf(types.DTBool, 2), arrayBytes(16, []int32{2}, []byte{1}, []byte{0}), "{t,f}", ""},
		{"int8 tensor", types.TensorOf(types.DTInt8, 2), arrayBytes(21, []int32{2}, i16(-128), i16(127)), "{-128,127}", ""},
		{"int8 tensor range", types.TensorOf(types.DTInt8, 1), arrayBytes(21, []int32{1}, i16(128)), "", pgerror.NumericValueOutOfRange},
		{"int32 tensor", types.TensorOf(types.DTInt32, 1, 2), arrayBytes(23, []int32{1, 2}, i32(-1), i32(1<<30)), "{{-1,1073741824}}", ""},
		{"float64 tensor", types.TensorOf(types.DTFloat64, 1), arrayBytes(701, []int32{1}, f64(0.1)), "{0.1}", ""},
		{"bfloat16 tensor", types.TensorOf(types.DTBFloat16, 2), arrayBytes(700, []int32{2}, f32(1.5), f32(float32(math.Inf(-1)))), "{1.5,-Infinity}", ""},
		{"float16 overflow", types.TensorOf(types.DTFloat16, 1), arrayBytes(700, []int32{1}, f32(70000)), "", pgerror.NumericValueOutOfRange},
		{"ragged tensor", types.TensorOf(types.DTInt16, types.Ragged, 2), arrayBytes(21, []int32{3, 2}, i16(1), i16(2), i16(3), i16(4), i16(5), i16(6)), "{{1,2},{3,4},{5,6}}", ""},
		{"empty ragged", types.TensorOf(types.DTInt16, types.Ragged), arrayBytes(21, nil), "{}", ""},
		{"empty fixed", types.TensorOf(types.DTInt16, 2), arrayBytes(21, nil), "", pgerror.DataException},
		{"wrong rank", types.TensorOf(types.DTInt16, 2), arrayBytes(21, []int32{1, 2}, i16(1), i16(2)), "", pgerror.DataException},
		{"null element", types.TensorOf(types.DTInt16, 2), arrayBytes(21, []int32{2}, i16(1), nil), "", pgerror.DataException},
		{"element size", types.TensorOf(types.DTInt16, 1), arrayBytes(21, []int32{1}, i32(1)), "", pgerror.InvalidBinaryRepresentation},
		{"element type", types.TensorOf(types.DTFloat32, 1), arrayBytes(701, []int32{1}, f64(1)), "", pgerror.DatatypeMismatch},
		{"missing elements", types.TensorOf(types.DTInt16, 3), arrayBytes(21, []int32{3}, i16(1)), "", pgerror.ProtocolViolation},
		{"huge dims", types.TensorOf(types.DTInt16, types.Ragged, types.Ragged), arrayBytes(21, []int32{1 << 30, 1 << 30}), "", pgerror.ProtocolViolation},
		{"negative dim", types.TensorOf(types.DTInt16, types.Ragged), arrayBytes(21, []int32{-1}), "", pgerror.InvalidBinaryRepresentation},
		{"trailing bytes", types.TensorOf(types.DTInt16, 1), append(arrayBytes(21, []int32{1}, i16(1)), 0), "", pgerror.InvalidBinaryRepresentation},
	} {
		got, err := binaryValue(tc.typ, tc.in)
		if tc.code != "" {
			if pgerror.GetCode(err) != tc.code {
				t.Errorf("%s: got %q, %v; want error %s", tc.name, got, err, tc.code)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestCopyBinaryHeader(t *testing.T) {
	header := func(flags, ext int32, extra ...byte) []byte {
		b := append([]byte(copySignature), i32(flags)...)
		return append(append(b, i32(ext)...), extra...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		msg  string
	}{
		{"empty", nil, "COPY file signature not recognized"},
		{"signature", []byte("PGCOPY\n\xff\r\n\x01\x00\x00\x00\x00\x00\x00\x00\x00"), "COPY file signature not recognized"},
		{"no flags", []byte(copySignature), "invalid COPY file header (missing flags)"},
		{"oids", header(1<<16, 0), "invalid COPY file header (WITH OIDS)"},
		{"critical flags", header(1<<20, 0), "unrecognized critical flags in COPY file header"},
		{"negative extension", header(0, -1), "invalid COPY file header (missing length)"},
		{"short extension", header(0, 4, 1, 2), "invalid COPY file header (wrong length)"},
	} {
		cf, _ := testCopy(t, plan.CopyOptions{Format: plan.CopyBinary}, types.TypInt4)
		d := &binaryReader{cf: cf, br: bufio.NewReader(bytes.NewReader(tc.in))}
		err := d.readHeader()
		if pgerror.GetCode(err) != pgerror.BadCopyFileFormat || err.Error() != tc.msg {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
	// Non-critical flags and a header extension are accepted.
	cf, inserted := testCopy(t, plan.CopyOptions{Format: plan.CopyBinary}, types.TypInt4)
	in := append(header(1<<3, 3, 'x', 'y', 'z'), i16(1)...)
	in = append(append(append(in, i32(4)...), i32(42)...), i16(-1)...)
	if n, err := cf.run(bufio.NewReader(bytes.NewReader(in))); err != nil || n != 1 || (*inserted)[0].Cols[0].Ints[0] != 42 {
		t.Errorf("run = %d, %v", n, err)
	}
}

// A stream error (the client's CopyFail) is reported as itself, not as
// bad data.
func TestCopyStreamError(t *testing.T) {
	fail := pgerror.New(pgerror.QueryCanceled, "COPY from stdin failed: stop")
	for _, opts := range []plan.CopyOptions{textOpts, {Format: plan.CopyBinary}} {
		cf, _ := testCopy(t, opts, types.TypInt4)
		r := io.MultiReader(strings.NewReader(copySignature+"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"), &errReader{fail})
		if opts.Format == plan.CopyText {
			r = io.MultiReader(strings.NewReader("1\n2"), &errReader{fail})
		}
		if _, err := cf.run(bufio.NewReader(r)); pgerror.GetCode(err) != pgerror.QueryCanceled {
			t.Errorf("format %d: %v, want 57014", opts.Format, err)
		}
	}
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

// Decoding a row allocates nothing once the batch has grown. (Tensors in
// text form are left out: their parser in types allocates per value.)
func TestCopyRowAllocs(t *testing.T) {
	row := "12345\tsome \\text\\ value\t3.25\tt\t[1.5,2.5]\n"
	cf, _ := testCopy(t, textOpts, types.TypInt4, types.TypText, types.TypFloat8, types.TypBool, types.VectorOf(2))
	d := newTextReader(cf, bufio.NewReader(&repeatReader{row: []byte(row)}))
	read := func() {
		if cf.batch.Len() >= copyBatchRows {
			cf.batch.Reset()
		}
		if ok, err := d.readRow(); !ok || err != nil {
			t.Fatalf("readRow: %v %v", ok, err)
		}
	}
	for range copyBatchRows {
		read()
	}
	if a := testing.AllocsPerRun(2000, read); a != 0 {
		t.Errorf("text row: %v allocations, want 0", a)
	}

	var tuple []byte
	tuple = append(tuple, i16(3)...)
	tuple = append(append(tuple, i32(4)...), i32(12345)...)
	tuple = append(append(tuple, i32(9)...), "some text"...)
	arr := arrayBytes(21, []int32{2}, i16(1), i16(2))
	tuple = append(append(tuple, i32(int32(len(arr)))...), arr...)
	cf, _ = testCopy(t, plan.CopyOptions{Format: plan.CopyBinary}, types.TypInt4, types.TypText, types.TensorOf(types.DTInt16, 2))
	b := &binaryReader{cf: cf, br: bufio.NewReader(&repeatReader{row: tuple})}
	read = func() {
		if cf.batch.Len() >= copyBatchRows {
			cf.batch.Reset()
		}
		if ok, err := b.readRow(); !ok || err != nil {
			t.Fatalf("readRow: %v %v", ok, err)
		}
	}
	for range copyBatchRows {
		read()
	}
	if a := testing.AllocsPerRun(2000, read); a != 0 {
		t.Errorf("binary row: %v allocations, want 0", a)
	}
}

// appendText hands AppendParsed a string that aliases a reused buffer; the
// errors it returns must not alias it.
func TestCopyAppendTextDoesNotRetainInput(t *testing.T) {
	cf, _ := testCopy(t, textOpts, types.TypText)
	for _, tc := range []struct {
		typ types.Type
		in  string
	}{
		{types.TypInt4, "12x"}, {types.TypInt2, "99999"}, {types.TypFloat8, "1e999"}, {types.TypFloat4, "nope"},
		{types.TypBool, "maybe"}, {types.TypJSON, "{bad"}, {types.TypJSONB, `{"a": tru}`}, {types.TypBytea, `\xzz`},
		{types.Type{Kind: types.Varchar, Width: 1}, "long"}, {types.VectorOf(2), "[1,x]"},
		{types.TensorOf(types.DTUint8, 2), "{1,300}"}, {types.TensorOf(types.DTFloat16, 1), "{1e9}"},
	} {
		buf := []byte(tc.in)
		err := cf.appendText(types.NewVec(tc.typ, 1), buf)
		if err == nil {
			t.Fatalf("%s %q: no error", tc.typ, tc.in)
		}
		msg := err.Error()
		for i := range buf {
			buf[i] = '#'
		}
		if err.Error() != msg || strings.Contains(msg, "#") {
			t.Errorf("%s: error changed with its input: %q → %q", tc.typ, msg, err.Error())
		}
	}
}

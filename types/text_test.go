package types

import (
	"errors"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// parseText parses s as t and returns its text output.
func parseText(t *testing.T, typ Type, s string) (string, error) {
	t.Helper()
	v := NewVec(typ, 1)
	if err := AppendParsed(v, s); err != nil {
		if v.Len() != 0 {
			t.Fatalf("%s %q: failed parse left %d rows", typ, s, v.Len())
		}
		return "", err
	}
	return string(AppendText(nil, v, 0)), nil
}

// checkCode asserts that err carries the SQLSTATE want (and, if msg is not
// empty, that exact message).
func checkCode(t *testing.T, err error, want pgerror.Code, msg string) {
	t.Helper()
	var pe *pgerror.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v: want a pgerror with code %s", err, want)
	}
	if pe.Code != want {
		t.Errorf("error %q: code %s, want %s", pe.Message, pe.Code, want)
	}
	if msg != "" && pe.Message != msg {
		t.Errorf("message %q, want %q", pe.Message, msg)
	}
}

// TestRoundTrip checks parse → text → parse → text for every scalar kind,
// vector and every tensor dtype, against PostgreSQL 15's output.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		typ      Type
		in, want string
	}{
		{TypBool, "t", "t"},
		{TypBool, " YES ", "t"},
		{TypBool, "of", "f"},
		{TypBool, "0", "f"},
		{TypInt2, "-32768", "-32768"},
		{TypInt4, "  +12 ", "12"},
		{TypInt4, "-0", "0"},
		{TypInt8, "-9223372036854775808", "-9223372036854775808"},
		{TypInt8, "9223372036854775807", "9223372036854775807"},
		{TypFloat8, "1e20", "1e+20"},
		{TypFloat8, "1e15", "1e+15"},
		{TypFloat8, "123456789012345", "123456789012345"},
		{TypFloat8, "0.0001", "0.0001"},
		{TypFloat8, "0.00001", "1e-05"},
		{TypFloat8, "-0", "-0"},
		{TypFloat8, "0.1", "0.1"},
		{TypFloat8, " 3.14159 ", "3.14159"},
		{TypFloat8, "4.9e-324", "5e-324"},
		{TypFloat8, "1.7976931348623157e308", "1.7976931348623157e+308"},
		{TypFloat8, "nan", "NaN"},
		{TypFloat8, "-Infinity", "-Infinity"},
		{TypFloat8, "inf", "Infinity"},
		{TypFloat4, "0.1", "0.1"},
		{TypFloat4, "1234567", "1.234567e+06"},
		{TypFloat4, "123456", "123456"},
		{TypFloat4, "999999", "999999"},
		{TypFloat4, "1000000", "1e+06"},
		{TypFloat4, "123456.7", "123456.7"},
		{TypFloat4, "16777217", "1.6777216e+07"},
		{TypFloat4, "0.3", "0.3"},
		{TypFloat4, "2.5e-10", "2.5e-10"},
		{TypFloat4, "-inf", "-Infinity"},
		{TypText, " a b ", " a b "},
		{Type{Kind: Varchar, Width: 3}, "héé", "héé"},
		{Type{Kind: Varchar, Width: 3}, "abc   ", "abc"},
		{TypBytea, `\x0aFF`, `\x0aff`},
		{TypBytea, `\x 0a ff`, `\x0aff`},
		{TypBytea, `a\\b\001`, `\x615c6201`},
		{TypBytea, ``, `\x`},
		{TypJSON, ` {"a" : 1 } `, ` {"a" : 1 } `},
		{TypJSONB, `{"b":1,"a":[1,2]}`, `{"a": [1, 2], "b": 1}`},
		{TypJSONB, `{"aa":1,"b":2,"a":{"c":[]},"ab":{}}`, `{"a": {"c": []}, "b": 2, "aa": 1, "ab": {}}`},
		{TypJSONB, `{"a":1,"a":2}`, `{"a": 2}`},
		{TypJSONB, `[1E-2, -0.00, 1e+0, -1.5e-1, 1e2, 1.0e1, 1.50]`, `[0.01, 0.00, 1, -0.15, 100, 10, 1.50]`},
		{TypJSONB, `"a\u00e9\t\u0001/\\\"\/x"`, `"aé\t\u0001/\\\"/x"`},
		{TypJSONB, `"\ud83d\ude00"`, `"😀"`},
		{TypJSONB, ` null `, `null`},
		{VectorOf(3), "[1, 2.5 ,3]", "[1,2.5,3]"},
		{VectorOf(0), " [1e20,-0.1] ", "[1e+20,-0.1]"},
		{TensorOf(DTBool, 2), "{t,FALSE}", "{t,f}"},
		{TensorOf(DTInt8, 3), "{-128, 0, 127}", "{-128,0,127}"},
		{TensorOf(DTUint8, 2, 2), "{{1,2},{3,255}}", "{{1,2},{3,255}}"},
		{TensorOf(DTUint8, Ragged, Ragged), "[[1,2],[3,4],[5,6]]", "{{1,2},{3,4},{5,6}}"},
		{TensorOf(DTInt16, Ragged, 2), "{}", "{}"},
		{TensorOf(DTInt16, 2, Ragged), "{{},{}}", "{{},{}}"},
		{TensorOf(DTInt32, 1, 1, 2), `{{{"1",-2}}}`, "{{{1,-2}}}"},
		{TensorOf(DTInt64, 2), "{-9223372036854775808,9223372036854775807}", "{-9223372036854775808,9223372036854775807}"},
		{TensorOf(DTFloat16, 4), "{0.1,65504,-0,Infinity}", "{0.099975586,65504,-0,Infinity}"},
		{TensorOf(DTBFloat16, 3), "{1.5,3.0e38,NaN}", "{1.5,3.0040553e+38,NaN}"},
		{TensorOf(DTFloat32, Ragged), "{0.1, 1234567}", "{0.1,1.234567e+06}"},
		{TensorOf(DTFloat64, 2), "{0.1,1e300}", "{0.1,1e+300}"},
	} {
		got, err := parseText(t, c.typ, c.in)
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s %q: got %q, want %q", c.typ, c.in, got, c.want)
			continue
		}
		again, err := parseText(t, c.typ, got)
		if err != nil || again != got {
			t.Errorf("%s %q: round trip gave %q, %v", c.typ, got, again, err)
		}
	}
}

// TestParseErrors checks the SQLSTATE and message of every kind of bad input.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		in   string
		code pgerror.Code
		msg  string
	}{
		{TypInt4, "12a", pgerror.InvalidTextRepresentation, `invalid input syntax for type integer: "12a"`},
		{TypInt4, "", pgerror.InvalidTextRepresentation, `invalid input syntax for type integer: ""`},
		{TypInt8, "1.5", pgerror.InvalidTextRepresentation, `invalid input syntax for type bigint: "1.5"`},
		{TypInt2, "x", pgerror.InvalidTextRepresentation, `invalid input syntax for type smallint: "x"`},
		{TypInt4, "99999999999", pgerror.NumericValueOutOfRange, `value "99999999999" is out of range for type integer`},
		{TypInt4, "99999999999a", pgerror.NumericValueOutOfRange, `value "99999999999a" is out of range for type integer`},
		{TypInt2, "32768", pgerror.NumericValueOutOfRange, `value "32768" is out of range for type smallint`},
		{TypInt8, "-9223372036854775809", pgerror.NumericValueOutOfRange, `value "-9223372036854775809" is out of range for type bigint`},
		{TypFloat8, "abc", pgerror.InvalidTextRepresentation, `invalid input syntax for type double precision: "abc"`},
		{TypFloat8, "1e", pgerror.InvalidTextRepresentation, ""},
		{TypFloat8, "0x10", pgerror.InvalidTextRepresentation, ""},
		{TypFloat8, "1e400", pgerror.NumericValueOutOfRange, `"1e400" is out of range for type double precision`},
		{TypFloat8, "1e-400", pgerror.NumericValueOutOfRange, `"1e-400" is out of range for type double precision`},
		{TypFloat4, "1e39", pgerror.NumericValueOutOfRange, `"1e39" is out of range for type real`},
		{TypFloat4, "abc", pgerror.InvalidTextRepresentation, `invalid input syntax for type real: "abc"`},
		{TypBool, "x", pgerror.InvalidTextRepresentation, `invalid input syntax for type boolean: "x"`},
		{TypBool, "o", pgerror.InvalidTextRepresentation, ""},
		{TypBool, "truex", pgerror.InvalidTextRepresentation, ""},
		{TypBool, "10", pgerror.InvalidTextRepresentation, ""},
		{Type{Kind: Varchar, Width: 2}, "héé", pgerror.StringDataRightTrunc, "value too long for type character varying(2)"},
		{TypBytea, `\xzz`, pgerror.InvalidParameterValue, `invalid hexadecimal digit: "z"`},
		{TypBytea, `\x123`, pgerror.InvalidParameterValue, "invalid hexadecimal data: odd number of digits"},
		{TypBytea, `\8`, pgerror.InvalidTextRepresentation, "invalid input syntax for type bytea"},
		{TypBytea, `a\`, pgerror.InvalidTextRepresentation, "invalid input syntax for type bytea"},
		{TypJSON, `{b:1}`, pgerror.InvalidJSONText, "invalid input syntax for type json"},
		{TypJSON, `01`, pgerror.InvalidJSONText, ""},
		{TypJSON, `1.`, pgerror.InvalidJSONText, ""},
		{TypJSON, `[1,2,]`, pgerror.InvalidJSONText, ""},
		{TypJSON, `truex`, pgerror.InvalidJSONText, ""},
		{TypJSON, "\"a\nb\"", pgerror.InvalidJSONText, ""},
		{TypJSON, `"\x"`, pgerror.InvalidJSONText, ""},
		{TypJSON, `"\u12"`, pgerror.InvalidJSONText, ""},
		{TypJSON, ``, pgerror.InvalidJSONText, ""},
		{TypJSON, `{"a":1} x`, pgerror.InvalidJSONText, ""},
		{TypJSONB, `"\ud800"`, pgerror.InvalidJSONText, ""},
		{TypJSONB, `"\ude00"`, pgerror.InvalidJSONText, ""},
		{TypJSONB, `"\u0000"`, "22P05", "unsupported Unicode escape sequence"},
		{TypJSONB, `1e1000000`, pgerror.NumericValueOutOfRange, "value overflows numeric format"},
		{VectorOf(3), "[1,2", pgerror.InvalidTextRepresentation, `invalid input syntax for type vector: "[1,2"`},
		{VectorOf(3), "[1,,2]", pgerror.InvalidTextRepresentation, ""},
		{VectorOf(3), "[1,2,]", pgerror.InvalidTextRepresentation, ""},
		{VectorOf(3), "[1,a,2]", pgerror.InvalidTextRepresentation, ""},
		{VectorOf(3), "[1,2]", pgerror.DataException, "expected 3 dimensions, not 2"},
		{VectorOf(2), "[1,NaN]", pgerror.DataException, "NaN not allowed in vector"},
		{VectorOf(2), "[1,-inf]", pgerror.DataException, "infinite value not allowed in vector"},
		{VectorOf(0), "[ ]", pgerror.DataException, "vector must have at least 1 dimension"},
		{VectorOf(0), "[1e39]", pgerror.NumericValueOutOfRange, `"1e39" is out of range for type vector`},
		{TensorOf(DTUint8, 2), "{1,256}", pgerror.NumericValueOutOfRange, "value 256 is out of range for type uint8"},
		{TensorOf(DTInt8, 2), "{1,-129}", pgerror.NumericValueOutOfRange, "value -129 is out of range for type int8"},
		{TensorOf(DTInt64, 1), "{9223372036854775808}", pgerror.NumericValueOutOfRange, ""},
		{TensorOf(DTInt32, 2), "{1,1.5}", pgerror.InvalidTextRepresentation, `invalid input syntax for type int32: "1.5"`},
		{TensorOf(DTBool, 2), "{t,x}", pgerror.InvalidTextRepresentation, `invalid input syntax for type boolean: "x"`},
		{TensorOf(DTFloat32, 1), "{1e39}", pgerror.NumericValueOutOfRange, `"1e39" is out of range for type float32`},
		{TensorOf(DTFloat16, 1), "{70000}", pgerror.NumericValueOutOfRange, `"70000" is out of range for type float16`},
		{TensorOf(DTFloat64, 1), "{x}", pgerror.InvalidTextRepresentation, `invalid input syntax for type float64: "x"`},
		{TensorOf(DTInt32, 3), "{1,2}", pgerror.DataException, "tensor shape mismatch: expected [3], got [2]"},
		{TensorOf(DTInt32, 2, 3), "{{1,2},{3,4}}", pgerror.DataException, "tensor shape mismatch: expected [2][3], got [2][2]"},
		{TensorOf(DTInt32, 3), "{}", pgerror.DataException, "tensor shape mismatch: expected [3], got [0]"},
		{TensorOf(DTInt32, Ragged, Ragged), "{{1,2},{3}}", pgerror.DataException, ""},
		{TensorOf(DTInt32, Ragged, Ragged), "{{1,2},{}}", pgerror.DataException, ""},
		{TensorOf(DTInt32, 2, 2), "{1,2}", pgerror.DataException, ""},
		{TensorOf(DTInt32, 2), "{{1},{2}}", pgerror.DataException, ""},
		{TensorOf(DTInt32, 2), "{1,NULL}", pgerror.DataException, "tensor elements must not be null"},
		{TensorOf(DTInt32, 2), "{1,2", pgerror.InvalidTextRepresentation, `malformed array literal: "{1,2"`},
		{TensorOf(DTInt32, 2), "{1,2]", pgerror.InvalidTextRepresentation, ""},
		{TensorOf(DTInt32, 2), "{1,2} x", pgerror.InvalidTextRepresentation, ""},
		{TensorOf(DTInt32, 2), "1,2", pgerror.InvalidTextRepresentation, ""},
		{TensorOf(DTInt32, 2), "{1,,2}", pgerror.InvalidTextRepresentation, ""},
		{TensorOf(DTInt32, 2), `{1,"2}`, pgerror.InvalidTextRepresentation, ""},
	} {
		_, err := parseText(t, c.typ, c.in)
		if err == nil {
			t.Errorf("%s %q: no error, want %s", c.typ, c.in, c.code)
			continue
		}
		checkCode(t, err, c.code, c.msg)
	}
}

// TestAppendParsedKeepsVecOnError checks that a failed parse leaves earlier
// rows intact and appends nothing.
func TestAppendParsedKeepsVecOnError(t *testing.T) {
	v := NewVec(TensorOf(DTUint8, Ragged), 2)
	if err := AppendParsed(v, "{1,2,3}"); err != nil {
		t.Fatal(err)
	}
	if err := AppendParsed(v, "{1,300}"); err == nil {
		t.Fatal("want an error")
	}
	if err := AppendParsed(v, "{4}"); err != nil {
		t.Fatal(err)
	}
	if v.Len() != 2 || string(AppendText(nil, v, 0)) != "{1,2,3}" || string(AppendText(nil, v, 1)) != "{4}" {
		t.Fatalf("got %d rows: %q", v.Len(), v.Bytes.Data)
	}
}

// TestAppendTextAllocs proves that formatting allocates nothing once dst is
// large enough.
func TestAppendTextAllocs(t *testing.T) {
	for _, c := range []struct {
		typ Type
		in  string
	}{
		{TypFloat8, "1.234e300"}, {TypFloat4, "0.1"}, {TypInt8, "-42"}, {TypBytea, `\xdeadbeef`},
		{TypJSONB, `{"a": [1, 2]}`}, {VectorOf(3), "[1,2,3]"},
		{TensorOf(DTFloat16, Ragged, 2), "{{1,2},{3,4}}"}, {TensorOf(DTUint8, 2, 2), "{{1,2},{3,4}}"},
	} {
		v := NewVec(c.typ, 1)
		if err := AppendParsed(v, c.in); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 0, 256)
		if n := testing.AllocsPerRun(100, func() { buf = AppendText(buf[:0], v, 0) }); n != 0 {
			t.Errorf("%s: %v allocs per AppendText", c.typ, n)
		}
	}
}

func BenchmarkAppendTextTensor(b *testing.B) {
	v := NewVec(TensorOf(DTFloat32, 16, 16), 1)
	var lit []byte
	lit = append(lit, '{')
	for i := 0; i < 16; i++ {
		if i > 0 {
			lit = append(lit, ',')
		}
		lit = append(lit, "{0.5,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15.25}"...)
	}
	lit = append(lit, '}')
	if err := AppendParsed(v, string(lit)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf = AppendText(buf[:0], v, 0)
	}
}

// FuzzAppendParsed checks that no input makes the tensor, jsonb, bytea or
// vector parsers panic, and that whatever parses round-trips through text.
func FuzzAppendParsed(f *testing.F) {
	for _, s := range []string{"{{1,2},{3,4}}", "[[1],[2]]", "{}", `{"a":[1,{"b":null}]}`, `\x00ff`, `a\\\001`, "[1,2,3]", `"\ud83d\ude00"`, "{{},{}}", `{"1",2}`} {
		f.Add(s)
	}
	types := []Type{
		TensorOf(DTUint8, Ragged, Ragged), TensorOf(DTFloat16, 2, 2), TensorOf(DTBool, Ragged), TensorOf(DTInt64, Ragged, 1),
		TypJSONB, TypJSON, TypBytea, VectorOf(0),
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range types {
			v := NewVec(typ, 1)
			if AppendParsed(v, s) != nil {
				continue
			}
			out := string(AppendText(nil, v, 0))
			w := NewVec(typ, 1)
			if err := AppendParsed(w, out); err != nil {
				t.Fatalf("%s: %q printed as %q which does not parse: %v", typ, s, out, err)
			}
			if again := string(AppendText(nil, w, 0)); again != out {
				t.Fatalf("%s: %q → %q → %q", typ, s, out, again)
			}
		}
	})
}

// TestAppendParsedBpchar checks character(n)'s padding and cut, and that
// padding a value allocates nothing once the Vec has grown.
func TestAppendParsedBpchar(t *testing.T) {
	typ := Type{Kind: Bpchar, Width: 3}
	for _, c := range []struct{ in, want string }{
		{"a", "a  "}, {"", "   "}, {"é", "é  "}, {"abc", "abc"}, {"ab  ", "ab "}, {"éüö   ", "éüö"},
	} {
		if got, err := parseText(t, typ, c.in); err != nil || got != c.want {
			t.Errorf("char(3) %q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	_, err := parseText(t, typ, "abcd")
	checkCode(t, err, pgerror.StringDataRightTrunc, "value too long for type character(3)")

	v := NewVec(Type{Kind: Bpchar, Width: 10}, 1000)
	v.Bytes.Data = make([]byte, 0, 10000)
	if n := testing.AllocsPerRun(500, func() {
		if v.Len() == 1000 {
			v.Reset()
		}
		_ = AppendParsed(v, "MAIL")
	}); n != 0 {
		t.Errorf("%v allocs per padded value", n)
	}
}

package sqllogic

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const sample = `# A comment before the first record.
hash-threshold 8

statement ok
CREATE TABLE t (a INT,
  b TEXT)

skipif mysql # not compatible
onlyif postgresql
statement error pgcode 42p01 relation "nope" does not exist
SELECT * FROM nope

statement error
SELECT 1/0

query IT rowsort lbl
SELECT a, b
FROM t
----
1
x
2
(empty)

query I valuesort
SELECT a FROM t
----
3 values hashing to C0710D6B4F15DFA88F600B0E6B624077

query IR
SELECT 1, 2.5
----
1 2.500

query T
DELETE FROM t

halt

statement ok
SELECT 'never parsed as run'
`

func TestParse(t *testing.T) {
	f, err := Parse("sample.test", strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Kind: HashThreshold, Line: 2, Threshold: 8},
		{Kind: StatementOK, Line: 4, SQL: "CREATE TABLE t (a INT,\n  b TEXT)"},
		{Kind: StatementError, Line: 10, SQL: "SELECT * FROM nope", ErrCode: "42P01",
			Conditions: []Condition{{Only: false, Engine: "mysql"}, {Only: true, Engine: "postgresql"}}},
		{Kind: StatementError, Line: 13, SQL: "SELECT 1/0"},
		{Kind: Query, Line: 16, SQL: "SELECT a, b\nFROM t", Types: "IT", Sort: RowSort, Label: "lbl",
			Expected: []string{"1", "x", "2", "(empty)"}, ResultLine: 20},
		{Kind: Query, Line: 25, SQL: "SELECT a FROM t", Types: "I", Sort: ValueSort,
			Expected:  []string{"3 values hashing to C0710D6B4F15DFA88F600B0E6B624077"},
			HashCount: 3, Hash: "c0710d6b4f15dfa88f600b0e6b624077", ResultLine: 28},
		{Kind: Query, Line: 30, SQL: "SELECT 1, 2.5", Types: "IR", Sort: NoSort, Expected: []string{"1 2.500"}, ResultLine: 33},
		{Kind: Query, Line: 35, SQL: "DELETE FROM t", Types: "T", Sort: NoSort},
		{Kind: Halt, Line: 38},
		{Kind: StatementOK, Line: 40, SQL: "SELECT 'never parsed as run'"},
	}
	if len(f.Records) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(f.Records), len(want), f.Records)
	}
	for i, got := range f.Records {
		w := want[i]
		if got.ErrMatch != nil {
			if i != 2 || got.ErrMatch.String() != `relation "nope" does not exist` {
				t.Errorf("record %d: ErrMatch %q", i, got.ErrMatch)
			}
			got.ErrMatch = nil
		} else if i == 2 {
			t.Errorf("record 2: no ErrMatch")
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

// TestRewrite checks that Rewrite replaces the expected sections of the
// failures with a Result, longer or shorter, fills an empty one at the end
// of the file, and leaves the rest of the file and the other failures.
func TestRewrite(t *testing.T) {
	const src = `query T
EXPLAIN SELECT 1
----
Result

query I
SELECT 1 UNION SELECT 2
----
1
2
3

statement error
SELECT 1/0

query I
SELECT 1 WHERE false
----
1

query T
SELECT 'new'
----`
	const want = `query T
EXPLAIN SELECT 1
----
Limit
  ->  Result

query I
SELECT 1 UNION SELECT 2
----
1
2

statement error
SELECT 1/0

query I
SELECT 1 WHERE false
----

query T
SELECT 'new'
----
new
`
	path := filepath.Join(t.TempDir(), "r.test")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fails := []Failure{
		{Line: 1, Result: []string{"Limit", "  ->  Result"}},
		{Line: 6, Result: []string{"1", "2"}},
		{Line: 13},
		{Line: 16, Result: []string{}},
		{Line: 21, Result: []string{"new"}},
	}
	rest, err := Rewrite(path, f, fails)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Line != 13 {
		t.Errorf("failures left %+v, want the one at line 13", rest)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src, err string
	}{
		{"bogus directive\n", "f.test:1: unknown directive"},
		{"\n\nstatement maybe\nSELECT 1\n", "f.test:3: unknown statement kind"},
		{"statement ok\n", "f.test:1: statement without SQL"},
		{"statement error pgcode 123\nSELECT 1\n", "bad SQLSTATE"},
		{"statement error pgcode\nSELECT 1\n", "usage: statement error pgcode"},
		{"statement ok\nSELECT 1\n----\n1\n", "statement has a ---- results section"},
		{"query X\nSELECT 1\n----\n1\n", "bad column type"},
		{"query I rowsort a b\nSELECT 1\n", "unexpected text"},
		{"skipif\nstatement ok\nSELECT 1\n", "skipif needs an engine name"},
		{"onlyif postgresql\n\nstatement ok\nSELECT 1\n", "not followed by a record"},
		{"hash-threshold x\n", "bad hash-threshold"},
	} {
		_, err := Parse("f.test", strings.NewReader(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Parse(%q) = %v, want error containing %q", tc.src, err, tc.err)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		typ  byte
		in   []byte
		want string
	}{
		{'I', nil, "NULL"},
		{'R', nil, "NULL"},
		{'T', nil, "NULL"},
		{'T', []byte{}, "(empty)"},
		{'I', []byte{}, "(empty)"},
		{'I', []byte("42"), "42"},
		{'I', []byte("-9223372036854775808"), "-9223372036854775808"},
		{'I', []byte("2.75"), "2"},
		{'I', []byte("-2.75"), "-2"},
		{'I', []byte("t"), "1"},
		{'I', []byte("f"), "0"},
		{'T', []byte("t"), "t"},
		{'I', []byte("abc"), "abc"},
		{'R', []byte("1.5"), "1.500"},
		{'R', []byte("3"), "3.000"},
		{'R', []byte("1e+20"), "100000000000000000000.000"},
		{'R', []byte("0.0005"), "0.001"},
		{'R', []byte("NaN"), "NaN"},
		{'R', []byte("Infinity"), "Infinity"},
		{'T', []byte("1.5"), "1.5"},
		{'T', []byte(`{"a": [1, 2]}`), `{"a": [1, 2]}`},
		{'T', []byte("\\x0102"), "\\x0102"},
		{'T', []byte("two\nlines\t!"), "two@lines@!"},
		{'T', []byte("héllo"), "héllo"},
	} {
		if got := FormatValue(tc.typ, tc.in); got != tc.want {
			t.Errorf("FormatValue(%c, %q) = %q, want %q", tc.typ, tc.in, got, tc.want)
		}
	}
}

func TestSortValues(t *testing.T) {
	for _, tc := range []struct {
		mode  SortMode
		ncols int
		in    []string
		want  []string
	}{
		{NoSort, 2, []string{"b", "1", "a", "2"}, []string{"b", "1", "a", "2"}},
		{RowSort, 2, []string{"b", "1", "a", "2", "a", "1"}, []string{"a", "1", "a", "2", "b", "1"}},
		// Bytewise, as strcmp: "10" sorts before "9", "NULL" before "a".
		{RowSort, 1, []string{"9", "10", "a", "NULL"}, []string{"10", "9", "NULL", "a"}},
		{ValueSort, 2, []string{"b", "1", "a", "2"}, []string{"1", "2", "a", "b"}},
	} {
		got := slices.Clone(tc.in)
		SortValues(tc.mode, got, tc.ncols)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SortValues(%v, %q) = %q, want %q", tc.mode, tc.in, got, tc.want)
		}
	}
}

func TestHash(t *testing.T) {
	// Reference values from md5sum(1) over the same bytes.
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "d41d8cd98f00b204e9800998ecf8427e"},
		{[]string{"1", "2", "3"}, "c0710d6b4f15dfa88f600b0e6b624077"},
		{[]string{"a", "NULL", "(empty)", "1.500"}, "0826fda7f9dfa2c91fdda74a6fdb17df"},
	} {
		if got := Hash(tc.in); got != tc.want {
			t.Errorf("Hash(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestHashFile checks a hashed record end to end: the values of a small file
// formatted, sorted and hashed must give the md5 the file states.
func TestHashFile(t *testing.T) {
	f, err := Parse("h.test", strings.NewReader("query IRT rowsort\nSELECT 1\n----\n6 values hashing to fffd21c6945a3a076b41ca5b0352225d\n"))
	if err != nil {
		t.Fatal(err)
	}
	rec := f.Records[0]
	rows := [][][]byte{
		{[]byte("2"), []byte("0.1"), []byte("")},
		{[]byte("1"), nil, []byte("x")},
	}
	var values []string
	for _, row := range rows {
		for j, v := range row {
			values = append(values, FormatValue(rec.Types[j], v))
		}
	}
	SortValues(rec.Sort, values, len(rec.Types))
	if want := []string{"1", "NULL", "x", "2", "0.100", "(empty)"}; !slices.Equal(values, want) {
		t.Fatalf("values %q, want %q", values, want)
	}
	if got := Hash(values); rec.HashCount != len(values) || got != rec.Hash {
		t.Errorf("%d values hashing to %s, file says %d values hashing to %s", len(values), got, rec.HashCount, rec.Hash)
	}
}

func TestMatchValues(t *testing.T) {
	for _, tc := range []struct {
		expected, values []string
		want             bool
	}{
		{[]string{"1", "a b"}, []string{"1", "a b"}, true},
		{[]string{"1 a", "2 b"}, []string{"1", "a", "2", "b"}, true},
		{[]string{"1\ta", "2   b"}, []string{"1", "a", "2", "b"}, true},
		{nil, nil, true},
		{[]string{"1", "2"}, []string{"1"}, false},
		{[]string{"1 2"}, []string{"12"}, false},
		{[]string{"NULL"}, []string{"(empty)"}, false},
	} {
		if got := matchValues(tc.expected, tc.values); got != tc.want {
			t.Errorf("matchValues(%q, %q) = %v, want %v", tc.expected, tc.values, got, tc.want)
		}
	}
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a.test", "b.txt", "x/c.test", "x/y/d.test", "x/y/e_deeplaked.test"} {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"**/*.test", []string{"a.test", "x/c.test", "x/y/d.test", "x/y/e_deeplaked.test"}},
		{"x/**/*.test", []string{"x/c.test", "x/y/d.test", "x/y/e_deeplaked.test"}},
		{"**/*_deeplaked.test", []string{"x/y/e_deeplaked.test"}},
		{"x/*/d.test", []string{"x/y/d.test"}},
		{"*.test", []string{"a.test"}},
		{"**/nothing", nil},
	} {
		got, err := Glob(filepath.Join(dir, tc.pattern))
		if err != nil {
			t.Fatal(err)
		}
		var rel []string
		for _, g := range got {
			r, _ := filepath.Rel(dir, g)
			rel = append(rel, filepath.ToSlash(r))
		}
		if !slices.Equal(rel, tc.want) {
			t.Errorf("Glob(%q) = %q, want %q", tc.pattern, rel, tc.want)
		}
	}
}

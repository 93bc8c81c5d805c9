package sql

import (
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// tables is a Catalog over fixed descriptors.
type tables map[string]*storage.TableDesc

func (c tables) Table(name string) (*storage.TableDesc, error) {
	if t, ok := c[name]; ok {
		return t, nil
	}
	return nil, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", name)
}

var copyCatalog = tables{"t": {ID: 1, Name: "t", Columns: []storage.ColumnDesc{
	{Name: "id", Type: types.TypInt4, Serial: true, NotNull: true},
	{Name: "a", Type: types.TypInt4},
	{Name: "b", Type: types.TypText, Default: "'x'"},
}}}

// bindCopy parses and binds one COPY statement.
func bindCopy(q string) (*plan.CopyFrom, error) {
	ps, err := Parse(q)
	if err != nil {
		return nil, err
	}
	if to, ok := ps[0].Stmt.(*CopyTo); ok {
		_, err := BindCopyTo(copyCatalog, to)
		return nil, err
	}
	return BindCopy(copyCatalog, ps[0].Stmt.(*Copy))
}

func TestBindCopy(t *testing.T) {
	n, err := bindCopy("COPY t (b, a) FROM STDIN")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Target) != 2 || n.Target[0] != 2 || n.Target[1] != 1 {
		t.Errorf("target = %v, want [2 1]", n.Target)
	}
	if c, ok := n.Defaults[0].(*plan.Call); !ok || c.Op != plan.OpNextVal || n.Defaults[1] != nil || n.Defaults[2] != nil {
		t.Errorf("defaults = %v", n.Defaults)
	}
	want := plan.CopyOptions{Format: plan.CopyText, Header: plan.HeaderNone, Delimiter: '\t', Null: `\N`}
	if n.Options != want {
		t.Errorf("options = %+v, want %+v", n.Options, want)
	}

	n, err = bindCopy("COPY t (a) FROM STDIN")
	if err != nil {
		t.Fatal(err)
	}
	if d := n.Defaults[2]; d == nil || d.String() != "'x'::text" {
		t.Errorf("default of b = %v", d)
	}
	if n, err = bindCopy("COPY t FROM STDIN"); err != nil || len(n.Target) != 3 {
		t.Errorf("all columns: %v, %v", n, err)
	}
}

func TestCopyOptions(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want plan.CopyOptions
	}{
		{"COPY t FROM STDIN WITH (FORMAT csv)", plan.CopyOptions{Format: plan.CopyCSV, Header: plan.HeaderNone, Delimiter: ',', Quote: '"', Escape: '"'}},
		{"COPY t FROM STDIN CSV HEADER", plan.CopyOptions{Format: plan.CopyCSV, Header: plan.HeaderSkip, Delimiter: ',', Quote: '"', Escape: '"'}},
		{"COPY t FROM STDIN WITH CSV DELIMITER ';' NULL AS 'n' QUOTE AS '''' ESCAPE '\\'",
			plan.CopyOptions{Format: plan.CopyCSV, Header: plan.HeaderNone, Delimiter: ';', Null: "n", Quote: '\'', Escape: '\\'}},
		{"COPY t FROM STDIN (FORMAT csv, HEADER MATCH)", plan.CopyOptions{Format: plan.CopyCSV, Header: plan.HeaderMatch, Delimiter: ',', Quote: '"', Escape: '"'}},
		{"COPY t FROM STDIN (HEADER 0, FORMAT text, DELIMITER '|', NULL '')", plan.CopyOptions{Format: plan.CopyText, Header: plan.HeaderNone, Delimiter: '|'}},
		{"COPY t FROM STDIN (HEADER on, ENCODING 'UTF-8')", plan.CopyOptions{Format: plan.CopyText, Header: plan.HeaderSkip, Delimiter: '\t', Null: `\N`}},
		{"COPY t FROM STDIN BINARY", plan.CopyOptions{Format: plan.CopyBinary, Header: plan.HeaderNone, Delimiter: '\t', Null: `\N`}},
		{"COPY t FROM STDIN WITH BINARY", plan.CopyOptions{Format: plan.CopyBinary, Header: plan.HeaderNone, Delimiter: '\t', Null: `\N`}},
	} {
		n, err := bindCopy(tc.q)
		if err != nil || n.Options != tc.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.q, n.Options, err, tc.want)
		}
	}
}

// The errors and their order are PostgreSQL's.
func TestCopyErrors(t *testing.T) {
	for _, tc := range []struct {
		q    string
		code pgerror.Code
		msg  string
	}{
		{"COPY nope FROM STDIN (FORMAT xml)", "42P01", `relation "nope" does not exist`},
		{"COPY t (zz) FROM STDIN (FORMAT xml)", "42703", `column "zz" of relation "t" does not exist`},
		{"COPY t (a, a) FROM STDIN", "42701", `column "a" specified more than once`},
		{"COPY t FROM STDIN (FORMAT xml)", "22023", `COPY format "xml" not recognized`},
		{"COPY t FROM STDIN (FORMAT 'CSV')", "22023", `COPY format "CSV" not recognized`},
		{"COPY t FROM STDIN (foo 1)", "42601", `option "foo" not recognized`},
		{"COPY t FROM STDIN (FORMAT csv, FORMAT csv)", "42601", "conflicting or redundant options"},
		{"COPY t FROM STDIN (HEADER 2)", "42601", `header requires a Boolean value or "match"`},
		{"COPY t FROM STDIN (HEADER 'foo')", "42601", `header requires a Boolean value or "match"`},
		{"COPY t FROM STDIN (FORMAT binary, DELIMITER ',')", "42601", "cannot specify DELIMITER in BINARY mode"},
		{"COPY t FROM STDIN (FORMAT binary, NULL 'x')", "42601", "cannot specify NULL in BINARY mode"},
		{"COPY t FROM STDIN (FORMAT binary, HEADER)", "0A000", "cannot specify HEADER in BINARY mode"},
		{"COPY t FROM STDIN (DELIMITER 'ab')", "0A000", "COPY delimiter must be a single one-byte character"},
		{"COPY t FROM STDIN (DELIMITER '')", "0A000", "COPY delimiter must be a single one-byte character"},
		{"COPY t FROM STDIN (DELIMITER E'\\n')", "22023", "COPY delimiter cannot be newline or carriage return"},
		{"COPY t FROM STDIN (NULL E'a\\rb')", "22023", "COPY null representation cannot use newline or carriage return"},
		{"COPY t FROM STDIN (DELIMITER '\\')", "22023", `COPY delimiter cannot be "\"`},
		{"COPY t FROM STDIN (DELIMITER 'a')", "22023", `COPY delimiter cannot be "a"`},
		{"COPY t FROM STDIN (QUOTE '|')", "0A000", "COPY quote available only in CSV mode"},
		{"COPY t FROM STDIN (ESCAPE '|')", "0A000", "COPY escape available only in CSV mode"},
		{"COPY t FROM STDIN (FORMAT csv, QUOTE '')", "0A000", "COPY quote must be a single one-byte character"},
		{"COPY t FROM STDIN (FORMAT csv, ESCAPE 'ab')", "0A000", "COPY escape must be a single one-byte character"},
		{"COPY t FROM STDIN (FORMAT csv, QUOTE ',')", "22023", "COPY delimiter and quote must be different"},
		{"COPY t FROM STDIN (NULL 'a\tb')", "0A000", "COPY delimiter must not appear in the NULL specification"},
		{"COPY t FROM STDIN (FORMAT csv, NULL '\"x')", "0A000", "CSV quote character must not appear in the NULL specification"},
		{"COPY t FROM STDIN (ENCODING 'latin1')", "0A000", `COPY encoding "latin1" is not supported; data must be UTF8`},
		{"COPY t FROM STDIN (FREEZE)", "0A000", "COPY option FREEZE is not supported yet"},
		{"COPY t FROM STDIN (FORCE_NOT_NULL (a))", "0A000", "option FORCE_NOT_NULL with a column list is not supported yet"},
		{"COPY t FROM STDIN WHERE a > 1", "0A000", "COPY FROM ... WHERE is not supported yet"},
		{"COPY t TO '/tmp/x'", "0A000", "COPY TO a file or program is not supported"},
		{"COPY (SELECT 1) TO PROGRAM 'cat'", "0A000", "COPY TO a file or program is not supported"},
		{"COPY t FROM STDIN (FORMAT tensor)", "0A000", `COPY format "tensor" is only available with COPY TO`},
		{"COPY (SELECT a FROM t) TO STDOUT (FORMAT tensor, HEADER)", "0A000", "cannot specify HEADER with FORMAT tensor"},
		{"COPY t TO STDOUT (FORMAT tensor, DELIMITER ',')", "0A000", "cannot specify DELIMITER with FORMAT tensor"},
		{"COPY t TO STDOUT (FORMAT csv, BATCH_SIZE 4)", "0A000", "COPY BATCH_SIZE available only with FORMAT tensor"},
		{"COPY t TO STDOUT (SHUFFLE true)", "0A000", "COPY SHUFFLE available only with FORMAT tensor"},
		{"COPY t TO STDOUT (FORMAT tensor, BATCH_SIZE 0)", "22023", "BATCH_SIZE 0 is out of range (1 to 1048576)"},
		{"COPY t TO STDOUT (FORMAT tensor, BATCH_SIZE 2000000)", "22023", "BATCH_SIZE 2000000 is out of range (1 to 1048576)"},
		{"COPY t TO STDOUT (FORMAT tensor, BATCH_SIZE 'x')", "22023", `invalid value for BATCH_SIZE: "x"`},
		{"COPY t TO STDOUT (FORMAT tensor, BATCH_SIZE)", "42601", "batch_size requires a numeric value"},
		{"COPY t TO STDOUT (FORMAT tensor, BATCH_SIZE 2, BATCH_SIZE 3)", "42601", "conflicting or redundant options"},
		{"COPY t TO STDOUT (FORMAT tensor, SHUFFLE 'maybe')", "42601", `shuffle requires a Boolean value or "exact"`},
		{"COPY t TO STDOUT (FORMAT tensor, DROP_LAST 'x')", "42601", "drop_last requires a Boolean value"},
		{"COPY t TO STDOUT (FORMAT tensor, SHARD '2/2')", "22023", `invalid value for SHARD: "2/2"`},
		{"COPY t TO STDOUT (FORMAT tensor, SHARD '0/0')", "22023", `invalid value for SHARD: "0/0"`},
		{"COPY t TO STDOUT (FORMAT tensor, SHARD '1')", "22023", `invalid value for SHARD: "1"`},
		{"COPY t TO STDOUT (FORMAT tensor, SEED 'abc')", "22023", `invalid value for SEED: "abc"`},
		{"COPY t TO STDOUT (FORMAT tensor, START_BATCH -1)", "22023", "START_BATCH -1 is out of range (0 to 4611686018427387904)"},
		{"COPY t TO STDOUT (FORMAT tensor, VERSION '')", "22023", `invalid value for VERSION: ""`},
		{"COPY t TO STDOUT (FORMAT tensor, VERSION 0)", "22023", "VERSION 0 is out of range (1 to 9223372036854775807)"},
		{"COPY t TO STDOUT (FORMAT tensor, SHUFFLE_BUFFER 0)", "22023", "SHUFFLE_BUFFER 0 is out of range (1 to 16777216)"},
		{"COPY t TO STDOUT (FORMAT tensor, EPOCH '')", "22023", `invalid value for EPOCH: ""`},
		{"COPY t TO STDOUT (FORMAT tensor, EPOCH)", "22023", `invalid value for EPOCH: ""`},
		{"COPY t TO STDOUT (FORMAT tensor, EPOCH '" + strings.Repeat("k", 257) + "')", "22023", `invalid value for EPOCH: "` + strings.Repeat("k", 257) + `"`},
		{"COPY t TO STDOUT (FORMAT csv, EPOCH 'e')", "0A000", "COPY EPOCH available only with FORMAT tensor"},
		{"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY 1048575)", "22023", "SHARED_MEMORY 1048575 is out of range (1048576 to 4294967296)"},
		{"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY 'big')", "22023", `invalid value for SHARED_MEMORY: "big"`},
		{"COPY t TO STDOUT (FORMAT binary, SHARED_MEMORY true)", "0A000", "COPY SHARED_MEMORY available only with FORMAT tensor"},
		{"COPY t TO STDOUT (HEADER match)", "0A000", `cannot use "match" with HEADER in COPY TO`},
		{"COPY t TO STDOUT (FORCE_QUOTE (a))", "0A000", "COPY force quote available only in CSV mode"},
		{"COPY t FROM STDIN (FORMAT csv, FORCE_QUOTE (a))", "0A000", "option FORCE_QUOTE with a column list is not supported yet"},
		{"COPY t TO STDOUT (FORMAT csv, FORCE_QUOTE (zz))", "42703", `column "zz" of relation "t" does not exist`},
		{"COPY t (a) TO STDOUT (FORMAT csv, FORCE_QUOTE (b))", "42P10", `FORCE_QUOTE column "b" not referenced by COPY`},
		{"COPY (SELECT a FROM t) TO STDOUT (FORMAT csv, FORCE_QUOTE (b))", "42703", `column "b" does not exist`},
		{"COPY t (a, a) TO STDOUT", "42701", `column "a" specified more than once`},
		{"COPY t (zz) TO STDOUT", "42703", `column "zz" of relation "t" does not exist`},
		{"COPY nope TO STDOUT", "42P01", `relation "nope" does not exist`},
		{"COPY t TO STDOUT WHERE a > 1", "42601", "WHERE clause not allowed with COPY TO"},
		{"COPY (INSERT INTO t VALUES (1) RETURNING a) TO STDOUT", "0A000", "COPY of a statement other than SELECT is not supported yet"},
		{"COPY t FROM '/etc/passwd'", "0A000", "COPY FROM a file or program is not supported"},
		{"COPY t FROM PROGRAM 'ls'", "0A000", "COPY FROM a file or program is not supported"},
	} {
		_, err := bindCopy(tc.q)
		if pgerror.GetCode(err) != tc.code || err.Error() != tc.msg {
			t.Errorf("%s:\n got %v (%s)\nwant %s (%s)", tc.q, err, pgerror.GetCode(err), tc.msg, tc.code)
		}
	}
}

func TestTensorOptions(t *testing.T) {
	for q, want := range map[string]plan.TensorOptions{
		"COPY t TO STDOUT (FORMAT tensor)": {BatchSize: 256, ShuffleBuffer: 16384, World: 1},
		"COPY (SELECT a FROM t) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 8, SHUFFLE true, SEED 42, SHARD '1/4', DROP_LAST true, SHUFFLE_BUFFER 100, START_BATCH 3)": {
			BatchSize: 8, Shuffle: plan.ShuffleBuffer, Seed: 42, SeedSet: true, Rank: 1, World: 4, DropLast: true, ShuffleBuffer: 100, StartBatch: 3},
		"COPY t TO STDOUT (FORMAT tensor, SHUFFLE 'exact', SEED -1, DROP_LAST)":    {BatchSize: 256, ShuffleBuffer: 16384, World: 1, Shuffle: plan.ShuffleExact, Seed: 1<<64 - 1, SeedSet: true, DropLast: true},
		"COPY t TO STDOUT (FORMAT tensor, SHUFFLE off, SEED 18446744073709551615)": {BatchSize: 256, ShuffleBuffer: 16384, World: 1, Seed: 1<<64 - 1, SeedSet: true},
		"COPY t TO STDOUT (FORMAT tensor, VERSION '12')":                           {BatchSize: 256, ShuffleBuffer: 16384, World: 1, Version: 12},
		"COPY t TO STDOUT (FORMAT tensor, EPOCH 'run7:3')":                         {BatchSize: 256, ShuffleBuffer: 16384, World: 1, Epoch: "run7:3"},
		"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY)":                          {BatchSize: 256, ShuffleBuffer: 16384, World: 1, SharedMemory: 64 << 20},
		"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY on)":                       {BatchSize: 256, ShuffleBuffer: 16384, World: 1, SharedMemory: 64 << 20},
		"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY false)":                    {BatchSize: 256, ShuffleBuffer: 16384, World: 1},
		"COPY t TO STDOUT (FORMAT tensor, SHARED_MEMORY 2097152)":                  {BatchSize: 256, ShuffleBuffer: 16384, World: 1, SharedMemory: 2 << 20},
	} {
		ps, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, err := BindCopyTo(copyCatalog, ps[0].Stmt.(*CopyTo))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n.Options.Format != plan.CopyTensor || n.Options.Tensor != want {
			t.Errorf("%s:\n got %+v\nwant %+v", q, n.Options.Tensor, want)
		}
	}
}

func TestBindCopyTo(t *testing.T) {
	for _, tc := range []struct {
		q     string
		cols  string
		force []bool
	}{
		{"COPY t TO STDOUT", "id,a,b", nil},
		{"COPY t (b) TO STDOUT (FORMAT csv, FORCE_QUOTE *)", "b", []bool{true}},
		{"COPY t TO STDOUT WITH CSV FORCE QUOTE b", "id,a,b", []bool{false, false, true}},
		{"COPY (SELECT b AS x, a FROM t) TO STDOUT (FORMAT csv, FORCE_QUOTE (a))", "x,a", []bool{false, true}},
	} {
		ps, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		n, err := BindCopyTo(copyCatalog, ps[0].Stmt.(*CopyTo))
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		var names []string
		for _, c := range n.Columns() {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, ","); got != tc.cols || !slices.Equal(n.ForceQuote, tc.force) {
			t.Errorf("%s: columns %s, force quote %v", tc.q, got, n.ForceQuote)
		}
	}
}

func TestParseVacuum(t *testing.T) {
	for q, want := range map[string]int{"VACUUM": 0, "VACUUM t": 1, "VACUUM FULL t, u": 2, "VACUUM (VERBOSE, ANALYZE) t": 1} {
		ps, err := Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if v, ok := ps[0].Stmt.(*Vacuum); !ok || len(v.Tables) != want {
			t.Errorf("%s: %#v", q, ps[0].Stmt)
		}
	}
	for q, code := range map[string]pgerror.Code{"VACUUM (foo) t": "42601", "ANALYZE t": "0A000", "VACUUM t (a)": "0A000"} {
		if _, err := Parse(q); pgerror.GetCode(err) != code {
			t.Errorf("%s: %v, want %s", q, err, code)
		}
	}
}

func TestTableOptions(t *testing.T) {
	bind := func(q string) (*storage.TableDesc, error) {
		ps, err := Parse(q)
		if err != nil {
			return nil, err
		}
		return BindCreateTable(tables{}, ps[0].Stmt.(*CreateTable))
	}
	d, err := bind("CREATE TABLE x (a int COMPRESSION ZSTD, b text COMPRESSION default, c text) WITH (chunk_size = '16MB', compression = 'S2')")
	if err != nil {
		t.Fatal(err)
	}
	if d.Options != (storage.TableOptions{ChunkSize: 16 << 20, Compression: "s2"}) {
		t.Errorf("options = %+v", d.Options)
	}
	if d.Columns[0].Compression != "zstd" || d.Columns[1].Compression != "" || d.Columns[2].Compression != "" {
		t.Errorf("column compression = %q %q %q", d.Columns[0].Compression, d.Columns[1].Compression, d.Columns[2].Compression)
	}
	if d, err = bind("CREATE TABLE x (a int)"); err != nil || d.Options != (storage.TableOptions{}) {
		t.Errorf("no options: %+v, %v", d, err)
	}
	for _, tc := range []struct{ with, msg string }{
		{"foo = 1", `unrecognized parameter "foo"`},
		{"chunk_size = '1 XB'", `invalid value for parameter "chunk_size": "1 XB"`},
		{"chunk_size = '63kB'", `invalid value for parameter "chunk_size": "63kB"`},
		{"chunk_size = '1.5GB'", `invalid value for parameter "chunk_size": "1.5GB"`},
		{"compression = gzip", `invalid value for parameter "compression": "gzip"`},
		{"compression", `invalid value for parameter "compression": "true"`},
		{"chunk_size = '1MB', CHUNK_SIZE = '2MB'", `parameter "chunk_size" specified more than once`},
	} {
		_, err := bind("CREATE TABLE x (a int) WITH (" + tc.with + ")")
		if pgerror.GetCode(err) != pgerror.InvalidParameterValue || err.Error() != tc.msg {
			t.Errorf("%s: %v, want 22023 %s", tc.with, err, tc.msg)
		}
	}
	if _, err := bind("CREATE TABLE x (a int COMPRESSION pglz)"); pgerror.GetCode(err) != pgerror.InvalidParameterValue ||
		err.Error() != `invalid compression method "pglz"` {
		t.Errorf("pglz: %v", err)
	}
}

func TestParseMemorySize(t *testing.T) {
	for in, want := range map[string]int64{
		"65536": 65536, "64kB": 64 << 10, "16MB": 16 << 20, "1GB": 1 << 30, "2TB": 2 << 40, "0.5MB": 512 << 10,
		" 8 MB ": 8 << 20, "100B": 100, "+1kB": 1024,
	} {
		if got, ok := parseMemorySize(in); !ok || got != want {
			t.Errorf("%q = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "MB", "16mb", "16 KB", "1e3", "abc", "16MBs", "1..2MB", "99999999999TB"} {
		if got, ok := parseMemorySize(in); ok {
			t.Errorf("%q = %d, want an error", in, got)
		}
	}
}

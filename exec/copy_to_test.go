package exec

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// repeatOp returns the same batch n times.
type repeatOp struct {
	b    *types.Batch
	n, i int
}

func (o *repeatOp) Next() (*types.Batch, error) {
	if o.i == o.n {
		return nil, nil
	}
	o.i++
	return o.b, nil
}

func (o *repeatOp) Close() {}

var _ Operator = (*repeatOp)(nil)

// copyToBatch returns a batch of one column per type, the rows parsed from
// their text forms ("NULL" is NULL).
func copyToBatch(t testing.TB, ts []types.Type, rows ...[]string) *types.Batch {
	t.Helper()
	b := types.NewBatch(ts, len(rows))
	for _, row := range rows {
		for j, s := range row {
			if s == "NULL" {
				b.Cols[j].AppendNull()
			} else if err := types.AppendParsed(b.Cols[j], s); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
		}
	}
	return b
}

var copyToTypes = []types.Type{types.TypInt4, types.TypFloat8, types.TypText, types.TypBytea, types.TypJSONB,
	types.VectorOf(3), types.TensorOf(types.DTUint8, 2, 2), types.TensorOf(types.DTFloat16, types.Ragged)}

var copyToRows = [][]string{
	{"1", "0.5", "tab\there, \"quoted\"\n", `\x00ff`, `{"a": 1}`, "[1,2,3]", "{{1,2},{3,255}}", "{0.5,-2}"},
	{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	{"-7", "-1e300", `back\slash`, `\x`, `[]`, "[0,0,0]", "{{0,0},{0,0}}", "{}"},
}

// testCopyTo returns a COPY TO of n copies of b.
func testCopyTo(b *types.Batch, opts plan.CopyOptions, n int) (*CopyTo, *repeatOp) {
	op := &repeatOp{b: b, n: n}
	return &CopyTo{env: &Env{}, n: &plan.CopyTo{Query: &plan.Values{}, Options: opts}, op: op, opts: opts}, op
}

var binaryOpts = plan.CopyOptions{Format: plan.CopyBinary, Header: plan.HeaderNone}

// TestCopyToReadsBack decodes what COPY TO writes with COPY FROM's readers.
func TestCopyToReadsBack(t *testing.T) {
	b := copyToBatch(t, copyToTypes, copyToRows...)
	for _, opts := range []plan.CopyOptions{textOpts, csvOpts, binaryOpts} {
		ct, _ := testCopyTo(b, opts, 2)
		var out bytes.Buffer
		n, err := ct.Run(&out)
		if err != nil || n != 6 {
			t.Fatalf("format %d: %d rows, %v", opts.Format, n, err)
		}
		cf, inserted := testCopy(t, opts, copyToTypes...)
		if _, err := cf.run(bufio.NewReader(&out)); err != nil {
			t.Fatalf("format %d: %v", opts.Format, err)
		}
		var got []string
		for _, ib := range *inserted {
			for i := 0; i < ib.Len(); i++ {
				got = append(got, copyRowText(ib, i))
			}
		}
		if len(got) != 6 {
			t.Fatalf("format %d: %d rows read back", opts.Format, len(got))
		}
		for i, g := range got {
			if want := copyRowText(b, i%3); g != want {
				t.Errorf("format %d, row %d: %s, want %s", opts.Format, i, g, want)
			}
		}
	}
}

func copyRowText(b *types.Batch, i int) string {
	vals := make([]string, len(b.Cols))
	for j, v := range b.Cols {
		vals[j] = "NULL"
		if !v.Nulls[i] {
			vals[j] = string(types.AppendText(nil, v, i))
		}
	}
	return strings.Join(vals, "|")
}

// TestCopyToAllocs shows that writing rows allocates nothing once the
// buffers have grown.
func TestCopyToAllocs(t *testing.T) {
	b := copyToBatch(t, copyToTypes, copyToRows...)
	for _, opts := range []plan.CopyOptions{textOpts, csvOpts, binaryOpts} {
		ct, op := testCopyTo(b, opts, 100)
		if _, err := ct.Run(io.Discard); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(10, func() {
			op.i = 0
			if _, err := ct.Run(io.Discard); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("format %d: %v allocations per 300 rows", opts.Format, allocs)
		}
	}
}

func BenchmarkCopyTo(b *testing.B) {
	batch := copyToBatch(b, copyToTypes, copyToRows...)
	for _, tc := range []struct {
		name string
		opts plan.CopyOptions
	}{{"text", textOpts}, {"csv", csvOpts}, {"binary", binaryOpts}} {
		b.Run(tc.name, func(b *testing.B) {
			ct, op := testCopyTo(batch, tc.opts, 1000)
			b.ReportAllocs()
			for range b.N {
				op.i = 0
				if _, err := ct.Run(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCopyToRoundTrip writes text values with COPY TO and reads them back
// with COPY FROM, in text and CSV format with various delimiters, NULL
// strings, quotes and escapes: every value must come back as it was.
func FuzzCopyToRoundTrip(f *testing.F) {
	for _, s := range []string{"", `\N`, `\.`, "a\tb\nc\\d\re", `"quoted", 'q'`, "NULL", "x|y;z", "\x0b\b\f"} {
		f.Add(s, s+"!", byte(0))
	}
	f.Fuzz(func(t *testing.T, a, b string, variant byte) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || strings.ContainsRune(a+b, 0) {
			t.Skip()
		}
		optss := []plan.CopyOptions{
			textOpts, csvOpts,
			{Format: plan.CopyText, Header: plan.HeaderNone, Delimiter: '|', Null: "nil"},
			{Format: plan.CopyCSV, Header: plan.HeaderNone, Delimiter: ';', Null: "NULL", Quote: '\'', Escape: '\\'},
		}
		opts := optss[int(variant)%len(optss)]
		ts := []types.Type{types.TypText, types.TypText}
		batch := types.NewBatch(ts, 2)
		batch.Cols[0].AppendString(a)
		batch.Cols[1].AppendString(b)
		batch.Cols[0].AppendNull()
		batch.Cols[1].AppendString(a)
		ct, _ := testCopyTo(batch, opts, 1)
		var out bytes.Buffer
		if _, err := ct.Run(&out); err != nil {
			t.Fatal(err)
		}
		cf, inserted := testCopy(t, opts, ts...)
		if _, err := cf.run(bufio.NewReader(bytes.NewReader(out.Bytes()))); err != nil {
			t.Fatalf("%q: %v", out.Bytes(), err)
		}
		got := ""
		for _, ib := range *inserted {
			for i := 0; i < ib.Len(); i++ {
				got += copyRowText(ib, i) + "\n"
			}
		}
		if want := copyRowText(batch, 0) + "\n" + copyRowText(batch, 1) + "\n"; got != want {
			t.Fatalf("format %d: read back %q, want %q; data %q", opts.Format, got, want, out.Bytes())
		}
	})
}

package exec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// rowsText renders the first n rows of b, one string a row.
func rowsText(b *types.Batch, n int) []string {
	var out []string
	for r := range n {
		var vals []string
		for _, c := range b.Cols {
			if c.Nulls[r] {
				vals = append(vals, "<null>")
			} else {
				vals = append(vals, string(types.AppendText(nil, c, r)))
			}
		}
		out = append(out, strings.Join(vals, "|"))
	}
	return out
}

// errText renders an error with its SQLSTATE and CONTEXT.
func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %s [%s]", pe.Code, pe.Message, pe.Where)
	}
	return err.Error()
}

// serialCopy reads input row after row with one textReader over the
// stream: what the blocks parsed in parallel must match.
func serialCopy(t *testing.T, opts plan.CopyOptions, input string, ts ...types.Type) ([]string, string) {
	t.Helper()
	cf, _ := testCopy(t, opts, ts...)
	d := newTextReader(cf, bufio.NewReaderSize(strings.NewReader(input), 16))
	err := d.readHeader()
	rows := 0
	for err == nil {
		var ok bool
		if ok, err = d.readRow(); ok {
			rows++
		} else if err == nil {
			break
		}
	}
	return rowsText(cf.batch, rows), errText(err)
}

// parallelCopy runs COPY over input in blocks of blockSize bytes parsed
// by workers goroutines, and returns the inserted rows.
func parallelCopy(t *testing.T, opts plan.CopyOptions, input string, blockSize, workers int, ts ...types.Type) ([]string, string) {
	t.Helper()
	cf, inserted := testCopy(t, opts, ts...)
	cf.blockSize, cf.workers = blockSize, workers
	n, err := cf.run(bufio.NewReaderSize(strings.NewReader(input), 16))
	var rows []string
	for _, b := range *inserted {
		rows = append(rows, rowsText(b, b.Len())...)
	}
	if err == nil && int(n) != len(rows) {
		t.Fatalf("%q: %d rows counted, %d inserted", input, n, len(rows))
	}
	return rows, errText(err)
}

// checkBlocks compares parallelCopy to serialCopy for several block sizes
// and worker counts.
func checkBlocks(t *testing.T, opts plan.CopyOptions, input string, ts ...types.Type) {
	t.Helper()
	wantRows, wantErr := serialCopy(t, opts, input, ts...)
	for _, bs := range []int{1, 2, 3, 5, 8, 13, 64, 1 << 20} {
		for _, w := range []int{1, 3} {
			rows, err := parallelCopy(t, opts, input, bs, w, ts...)
			if err != wantErr || strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
				t.Fatalf("%q, blocks of %d, %d workers:\n got %q, %s\nwant %q, %s", input, bs, w, rows, err, wantRows, wantErr)
			}
		}
	}
}

// Blocks are cut where the rows end, whatever their size, so the rows,
// their line numbers and the errors are those of reading the stream row
// after row.
func TestCopyBlocksMatchSerial(t *testing.T) {
	text := []string{
		"a\t1\nb\t2\nc\t3\n",
		"a\t1\nb\t2\nc\t3",
		"a\\\nb\t1\nc\t2\\\n\n",
		"x\\\\\t1\n\\N\t\\N\ny\t3\r\nz\t4\n",
		"a\t1\n\\.\nb\tgarbage\n\xff\n",
		"a\t1\nb\t2\\.\nc\tgarbage\n",
		"a\t1\nb\t2\n\\.x\nc\t3\n",
		"a\t1\nb\t2\nc\tx\nd\t4\n",
		"a\t1\nb\t2\nc\t3\td\n",
		"a\t1\nb\n",
		"a\t1\n\xff\t2\n",
		"a\t1\nb\t2\n\\.",
		"a\x00\t1\n",
		"",
	}
	for _, in := range text {
		checkBlocks(t, textOpts, in, types.TypText, types.TypInt4)
	}
	csv := []string{
		"a,1\nb,2\nc,3\n",
		"\"a\nb\",1\n\"c\"\"\nd\",2\ne,3\n",
		"\"a\n\\.\n\",1\nb,2\n",
		"a,1\n\\.\nb,garbage\n",
		"a,1\n\\.\r\nb,garbage\n",
		"a,1\n\"b\nc,2\n",
		"a,1\n,2\n\"\",3\nd,x\n",
		"\"a\"\"\",1\r\n\"\n\n\",2\n",
		"a,1\nb,2\n\\.",
	}
	for _, in := range csv {
		checkBlocks(t, csvOpts, in, types.TypText, types.TypInt4)
	}
	// Blocks without a quote or backslash are split at the delimiter
	// alone; an unquoted empty field is still NULL, a custom NULL string
	// too.
	checkBlocks(t, csvOpts, "a,1\n,2\nb,\n,\nc,3,\n", types.TypText, types.TypInt4)
	pipes := textOpts
	pipes.Delimiter, pipes.Null = '|', "nil"
	checkBlocks(t, pipes, "a|1\nnil|nil\n|2\nb|x\n", types.TypText, types.TypInt4)
	header := csvOpts
	header.Header = plan.HeaderMatch
	checkBlocks(t, header, "c1,c2\na,1\n\"b\nc\",2\n", types.TypText, types.TypInt4)
	checkBlocks(t, header, "c1,c3\na,1\n", types.TypText, types.TypInt4)
	header = textOpts
	header.Header = plan.HeaderSkip
	checkBlocks(t, header, "h\\\nh\na\t1\nb\tx\n", types.TypText, types.TypInt4)
}

// Random inputs from the bytes that decide where rows end.
func TestCopyBlocksMatchSerialRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "1", "\t", ",", "\n", "\n", "\r\n", "\\", "\\.", "\"", "\\N", "\xff"}
	n := 400
	if testing.Short() {
		n = 100
	}
	for range n {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		opts := textOpts
		if rng.IntN(2) == 0 {
			opts = csvOpts
		}
		checkBlocks(t, opts, sb.String(), types.TypText, types.TypText)
	}
}

// Rows keep their input order across many blocks, each cut in batches.
func TestCopyBlocksKeepOrder(t *testing.T) {
	const rows = 30000
	for _, opts := range []plan.CopyOptions{textOpts, csvOpts} {
		// Every row holds a newline, escaped or quoted.
		var input strings.Builder
		for i := range rows {
			if opts.Format == plan.CopyCSV {
				fmt.Fprintf(&input, "%d,\"x\ny\"\n", i)
			} else {
				fmt.Fprintf(&input, "%d\tx\\\ny\n", i)
			}
		}
		cf, inserted := testCopy(t, opts, types.TypInt8, types.TypText)
		cf.blockSize, cf.workers = 1000, 4
		n, err := cf.run(bufio.NewReader(strings.NewReader(input.String())))
		if err != nil || n != rows {
			t.Fatalf("run = %d, %v", n, err)
		}
		next := int64(0)
		for _, b := range *inserted {
			if b.Len() > copyBatchRows {
				t.Fatalf("a batch of %d rows", b.Len())
			}
			for _, v := range b.Cols[0].Ints {
				if v != next {
					t.Fatalf("row %d holds %d", next, v)
				}
				next++
			}
		}
	}
}

// An error in a late block is reported with its line, after the rows
// before it were inserted; a NOT NULL violation too, by its line.
func TestCopyBlocksLateError(t *testing.T) {
	var input strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&input, "%d\tv%d\n", i, i)
	}
	bad := input.String() + "5000\tv\\\nw\n5001\tx\t\n5002\tv\n"
	cf, inserted := testCopy(t, textOpts, types.TypInt4, types.TypText)
	cf.blockSize, cf.workers = 512, 2
	_, err := cf.run(bufio.NewReader(strings.NewReader(bad)))
	if got, want := errText(err), `22P04 extra data after last expected column [COPY t, line 5002: "5001	x	"]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	rows := 0
	for _, b := range *inserted {
		rows += b.Len()
	}
	if rows != 5001 {
		t.Errorf("%d rows inserted before the error, want 5001", rows)
	}

	desc := &storage.TableDesc{Name: "t", Columns: []storage.ColumnDesc{
		{Name: "a", Type: types.TypInt4}, {Name: "b", Type: types.TypText, NotNull: true}}}
	n := &plan.CopyFrom{Table: desc, Target: []int{0, 1}, Options: csvOpts, Defaults: make([]plan.Expr, 2)}
	cf, err = newCopyFrom(&Env{}, n, func(*storage.TableDesc, *types.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cf.blockSize, cf.workers = 100, 2
	in := strings.ReplaceAll(input.String(), "\t", ",") + "1,\"a\nb\"\n2,\n3,x\n"
	_, err = cf.run(bufio.NewReader(strings.NewReader(in)))
	if got, want := errText(err), `23502 null value in column "b" of relation "t" violates not-null constraint [COPY t, line 5003]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The blocks in flight are charged to the statement's memory account,
// and given back at the end.
func TestCopyBlocksMemory(t *testing.T) {
	mon := NewMemMonitor("test", 0)
	cf, _ := testCopy(t, textOpts, types.TypInt4)
	cf.env.Mem = mon
	var input strings.Builder
	for i := range 100000 {
		input.WriteString(strconv.Itoa(i) + "\n")
	}
	cf.blockSize = 4096
	if _, err := cf.run(bufio.NewReader(strings.NewReader(input.String()))); err != nil {
		t.Fatal(err)
	}
	if mon.Peak() == 0 || mon.Used() != 0 {
		t.Errorf("peak %d, used %d after the COPY", mon.Peak(), mon.Used())
	}

	// Past the limit, the COPY fails with 53200.
	mon = NewMemMonitor("test", 1<<20)
	cf, _ = testCopy(t, textOpts, types.TypInt4)
	cf.env.Mem = mon
	cf.blockSize = 1 << 20
	_, err := cf.run(bufio.NewReader(strings.NewReader(strings.Repeat(input.String(), 4))))
	if pgerror.GetCode(err) != pgerror.OutOfMemory || mon.Used() != 0 {
		t.Errorf("over the limit: %v, %d used", err, mon.Used())
	}
}

// testTable creates a table t (id int8 primary key, v text) in a new
// in-memory database.
func testTable(t *testing.T) (*storage.DB, *storage.TableDesc) {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	desc := &storage.TableDesc{Name: "t", PrimaryKey: []int{0}, Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypText}}}
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	if desc, err = db.Table("t"); err != nil {
		t.Fatal(err)
	}
	return db, desc
}

// copyInto runs COPY t FROM the input in one transaction of db, in blocks
// of blockSize bytes, and commits it unless it fails.
func copyInto(t *testing.T, db *storage.DB, desc *storage.TableDesc, input string, blockSize int) (int64, error) {
	t.Helper()
	n := &plan.CopyFrom{Table: desc, Target: []int{0, 1}, Options: textOpts, Defaults: make([]plan.Expr, 2)}
	txn := db.Begin()
	cf, err := newCopyFrom(&Env{DB: db, Txn: txn}, n, txn.Insert)
	if err != nil {
		t.Fatal(err)
	}
	cf.blockSize, cf.workers = blockSize, 3
	count, err := cf.run(bufio.NewReader(strings.NewReader(input)))
	if err != nil {
		txn.Rollback()
		return 0, err
	}
	return count, txn.Commit()
}

// tableIDs returns the ids of t's rows in row id order.
func tableIDs(t *testing.T, db *storage.DB, desc *storage.TableDesc) (ids []int64) {
	t.Helper()
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.Scan(desc, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	last := uint64(0)
	for {
		b, rids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return ids
		}
		for i, rid := range rids {
			if rid <= last {
				t.Fatalf("row ids not ascending: %d after %d", rid, last)
			}
			last = rid
			ids = append(ids, b.Cols[0].Ints[i])
		}
	}
}

// Into a table: row ids follow the input order across blocks; a key
// repeated in another block, or one already committed, is a 23505 error
// and leaves nothing inserted.
func TestCopyBlocksIntoTable(t *testing.T) {
	db, desc := testTable(t)
	var input strings.Builder
	for _, id := range rand.New(rand.NewPCG(3, 4)).Perm(20000) {
		fmt.Fprintf(&input, "%d\tvalue %d\n", id, id)
	}
	if n, err := copyInto(t, db, desc, input.String(), 4096); err != nil || n != 20000 {
		t.Fatalf("copy = %d, %v", n, err)
	}
	ids := tableIDs(t, db, desc)
	if len(ids) != 20000 {
		t.Fatalf("%d rows", len(ids))
	}
	for i, line := range strings.Split(strings.TrimSuffix(input.String(), "\n"), "\n") {
		if want := strings.Split(line, "\t")[0]; strconv.FormatInt(ids[i], 10) != want {
			t.Fatalf("row %d holds %d, want %s", i, ids[i], want)
		}
	}

	input.Reset()
	for i := 20000; i < 30000; i++ {
		fmt.Fprintf(&input, "%d\tv\n", i)
	}
	for _, tc := range []struct{ in, detail string }{
		{input.String() + "20001\tagain\n", "Key (id)=(20001) already exists."},
		{input.String() + "31000\tnew\n17\tcommitted\n", "Key (id)=(17) already exists."},
		{"1\tx\n" + input.String(), "Key (id)=(1) already exists."},
	} {
		_, err := copyInto(t, db, desc, tc.in, 4096)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != pgerror.UniqueViolation || pe.Message != `duplicate key value violates unique constraint "t_pkey"` || pe.Detail != tc.detail {
			t.Errorf("got %v, want 23505 with %q", err, tc.detail)
		}
		if n := len(tableIDs(t, db, desc)); n != 20000 {
			t.Errorf("%d rows after the failed COPY, want 20000", n)
		}
	}
}

// Parsing a block allocates nothing once its batches have grown.
func TestCopyBlockAllocs(t *testing.T) {
	cf, _ := testCopy(t, csvOpts, types.TypInt4, types.TypText, types.TypNumeric, types.Type{Kind: types.Date})
	p := &copyPipe{cf: cf}
	d := newTextReader(cf, nil)
	for _, row := range []string{"12345,\"some \"\"text\"\" value\",3.25,1996-12-20\n", "12345,plain,3.25,1996-12-20\n"} {
		blk := &copyBlock{data: []byte(strings.Repeat(row, 2500)), plain: !strings.Contains(row, `"`)}
		parse := func() {
			p.parseBlock(d, blk)
			if blk.err != nil || len(blk.lines) != 2500 || blk.used != 3 {
				t.Fatalf("parsed %d rows in %d batches: %v", len(blk.lines), blk.used, blk.err)
			}
		}
		parse()
		if a := testing.AllocsPerRun(20, parse); a != 0 {
			t.Errorf("%q: %v allocations a block, want 0", row, a)
		}
	}
}

// BenchmarkCopyParseBlock parses a block of TPC-H lineitem rows.
func BenchmarkCopyParseBlock(b *testing.B) {
	opts := csvOpts
	opts.Delimiter = '|'
	cf, _ := testCopy(&testing.T{}, opts, types.TypInt4, types.TypInt4, types.TypInt4, types.TypInt4,
		types.Type{Kind: types.Numeric, Width: 15, Scale: 2}, types.Type{Kind: types.Numeric, Width: 15, Scale: 2},
		types.Type{Kind: types.Numeric, Width: 15, Scale: 2}, types.Type{Kind: types.Numeric, Width: 15, Scale: 2},
		types.Type{Kind: types.Bpchar, Width: 1}, types.Type{Kind: types.Bpchar, Width: 1},
		types.Type{Kind: types.Date}, types.Type{Kind: types.Date}, types.Type{Kind: types.Date},
		types.Type{Kind: types.Bpchar, Width: 25}, types.Type{Kind: types.Bpchar, Width: 10}, types.Type{Kind: types.Varchar, Width: 44})
	row := "1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the\n"
	blk := &copyBlock{data: []byte(strings.Repeat(row, 10000)), plain: true}
	p := &copyPipe{cf: cf}
	d := newTextReader(cf, nil)
	b.SetBytes(int64(len(blk.data)))
	b.ReportAllocs()
	for b.Loop() {
		p.parseBlock(d, blk)
		if blk.err != nil {
			b.Fatal(blk.err)
		}
	}
}

// watchedReader is a slow client: it counts reads, and those after done
// is set.
type watchedReader struct {
	r           io.Reader
	done        atomic.Bool
	reads, late atomic.Int64
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.reads.Add(1)
	if w.done.Load() {
		w.late.Add(1)
	}
	time.Sleep(100 * time.Microsecond)
	return w.r.Read(p)
}

// A failed or panicking insert stops the reading: once the COPY has
// returned (or panicked), nothing reads the client's stream any more,
// which the connection then reads again.
func TestCopyBlocksStopReading(t *testing.T) {
	input := strings.Repeat("1\tx\n", 200000)
	for _, fail := range []string{"error", "panic"} {
		cf, _ := testCopy(t, textOpts, types.TypInt4, types.TypText)
		cf.insert = func(*storage.TableDesc, *types.Batch) error {
			if fail == "panic" {
				panic("insert")
			}
			return pgerror.New(pgerror.UniqueViolation, "dup")
		}
		cf.blockSize = 1000
		w := &watchedReader{r: strings.NewReader(input)}
		func() {
			defer func() {
				if r := recover(); (r != nil) != (fail == "panic") {
					t.Errorf("%s: recovered %v", fail, r)
				}
			}()
			_, err := cf.run(bufio.NewReaderSize(w, 64))
			if pgerror.GetCode(err) != pgerror.UniqueViolation {
				t.Errorf("%s: %v", fail, err)
			}
		}()
		w.done.Store(true)
		time.Sleep(50 * time.Millisecond)
		if w.late.Load() != 0 || w.reads.Load() > 1000 {
			t.Errorf("%s: %d reads, %d after the COPY", fail, w.reads.Load(), w.late.Load())
		}
	}
}

// FuzzCopyBlocks compares COPY's blocks parsed in parallel with the
// stream read row after row, for any input and block size.
// go test -run XXX -fuzz FuzzCopyBlocks ./exec
func FuzzCopyBlocks(f *testing.F) {
	f.Add(uint8(0), uint8(3), []byte("a\t1\nb\\\n\t2\n\\.\nc\n"))
	f.Add(uint8(1), uint8(5), []byte("\"a\n\",1\n\\.\nb,\"\n"))
	f.Fuzz(func(t *testing.T, format, blockSize uint8, data []byte) {
		opts := []plan.CopyOptions{textOpts, csvOpts}[format%2]
		wantRows, wantErr := serialCopy(t, opts, string(data), types.TypText, types.TypInt4)
		rows, err := parallelCopy(t, opts, string(data), int(blockSize)+1, 2, types.TypText, types.TypInt4)
		if err != wantErr || strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
			t.Fatalf("blocks of %d:\n got %q, %s\nwant %q, %s", int(blockSize)+1, rows, err, wantRows, wantErr)
		}
	})
}

// An empty value that fails shows in the context as "", as in
// PostgreSQL, on the first row too (the serial reader's first values
// once showed none).
func TestCopyEmptyValueContext(t *testing.T) {
	for _, in := range []string{"\t\n", "a\\b\t\n"} {
		_, err := serialCopy(t, textOpts, in, types.TypText, types.TypInt4)
		if want := `22P02 invalid input syntax for type integer: "" [COPY t, line 1, column c2: ""]`; err != want {
			t.Errorf("%q: %s, want %s", in, err, want)
		}
	}
}

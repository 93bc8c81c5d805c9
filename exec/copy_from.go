package exec

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// COPY FROM hands rows to the transaction in batches of at most
// copyBatchRows rows or about copyBatchBytes bytes of input, whichever
// comes first, so memory stays bounded however long the stream is. (Text
// and CSV are parsed in blocks of copyBatchBytes of input, up to a row's
// end, each cut into batches of copyBatchRows: copy_parallel.go.)
const (
	copyBatchRows  = 1000
	copyBatchBytes = 4 << 20
	// maxCopyRow bounds one row of input (a text line, a binary field).
	maxCopyRow = 256 << 20
	// copyReadBuffer is the size of the buffer over the client's stream.
	copyReadBuffer = 64 << 10
)

// RunCopyFrom executes COPY FROM STDIN over r, the client's data stream
// (io.EOF ends it), inserting into the statement's transaction. It returns
// the number of rows copied. Errors about the data carry PostgreSQL's
// CONTEXT: "COPY t, line 3, column b: \"abc\"".
func RunCopyFrom(env *Env, n *plan.CopyFrom, r io.Reader) (int64, error) {
	cf, err := newCopyFrom(env, n, env.Txn.Insert)
	if err != nil {
		return 0, err
	}
	return cf.run(bufio.NewReaderSize(r, copyReadBuffer))
}

// copyFrom is the state of one COPY FROM statement.
type copyFrom struct {
	env    *Env
	n      *plan.CopyFrom
	insert func(*storage.TableDesc, *types.Batch) error

	// batch holds the rows not yet inserted, one Vec per table column;
	// target holds its Vecs of the input fields, in field order.
	batch  *types.Batch
	target []*types.Vec
	// lines holds the input line of each batched row; inBytes counts the
	// input bytes they came from.
	lines   []int64
	inBytes int
	// defaults evaluates each non-target column's default over counter, a
	// column-less batch of the batch's length.
	defaults []evaluator
	counter  types.Batch

	// line is the tuple being read (binary), 1-based.
	line  int64
	count int64

	// blockSize is the least input a block parsed in parallel holds
	// (text and CSV); workers is how many parse at once.
	blockSize int
	workers   int
}

func newCopyFrom(env *Env, n *plan.CopyFrom, insert func(*storage.TableDesc, *types.Batch) error) (*copyFrom, error) {
	cf := &copyFrom{
		env:       env,
		n:         n,
		insert:    insert,
		batch:     types.NewBatch(n.Table.ColumnTypes(), copyBatchRows),
		defaults:  make([]evaluator, len(n.Table.Columns)),
		lines:     make([]int64, 0, copyBatchRows),
		blockSize: copyBatchBytes,
		workers:   runtime.GOMAXPROCS(0),
	}
	for _, i := range n.Target {
		cf.target = append(cf.target, cf.batch.Cols[i])
	}
	for i, d := range n.Defaults {
		if d == nil {
			continue
		}
		ev, err := env.compile(d)
		if err != nil {
			return nil, err
		}
		cf.defaults[i] = ev
	}
	return cf, nil
}

// rowReader decodes one row per call into the target Vecs; ok is false at
// the end of the data.
type rowReader interface {
	readRow() (ok bool, err error)
}

func (cf *copyFrom) run(br *bufio.Reader) (int64, error) {
	if cf.n.Options.Format != plan.CopyBinary {
		return cf.runText(br)
	}
	d := &binaryReader{cf: cf, br: br}
	if err := d.readHeader(); err != nil {
		return 0, err
	}
	var rr rowReader = d
	for {
		ok, err := rr.readRow()
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		cf.lines = append(cf.lines, cf.line)
		if len(cf.lines) >= copyBatchRows || cf.inBytes >= copyBatchBytes {
			if err := cf.flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := cf.flush(); err != nil {
		return 0, err
	}
	return cf.count, nil
}

// flush inserts the batched rows.
func (cf *copyFrom) flush() error {
	if err := cf.insertRows(cf.batch, cf.lines); err != nil {
		return err
	}
	cf.batch.Reset()
	cf.lines = cf.lines[:0]
	cf.inBytes = 0
	return nil
}

// insertRows fills the defaults of b's rows, whose input lines are lines,
// checks NOT NULL and inserts them.
func (cf *copyFrom) insertRows(b *types.Batch, lines []int64) error {
	n := len(lines)
	if n == 0 {
		return nil
	}
	if err := cf.env.canceled(); err != nil {
		return err
	}
	cf.counter.SetLen(n)
	for i, ev := range cf.defaults {
		if ev == nil {
			continue
		}
		v, err := ev.eval(&cf.counter)
		if err != nil {
			return err
		}
		b.Cols[i].AppendVec(v)
	}
	t := cf.n.Table
	if row, err := notNullViolation(t, b); err != nil {
		return pgerror.WithWhere(err, fmt.Sprintf("COPY %s, line %d", t.Name, lines[row]))
	}
	if err := cf.insert(t, b); err != nil {
		return err
	}
	cf.count += int64(n)
	return nil
}

// appendText parses the text form of a value into v.
func (cf *copyFrom) appendText(v *types.Vec, val []byte) error {
	return types.AppendParsedBytes(v, val)
}

// appendChecked is appendText of a value known to be valid UTF-8 without
// NUL, which AppendParsedBytes would check again.
func appendChecked(v *types.Vec, val []byte) error {
	// NB: AppendParsed copies what it keeps, as AppendParsedBytes relies on.
	return types.AppendParsed(v, unsafe.String(unsafe.SliceData(val), len(val)))
}

// maxCopyDisplay is how much of a line or value a CONTEXT shows.
const maxCopyDisplay = 100

// lineError adds the context of the current tuple to err; text nil shows
// none.
func (cf *copyFrom) lineError(err error, text []byte) error {
	return cf.lineErrorAt(cf.line, err, text)
}

// lineErrorAt adds the context of a whole line to err; text nil shows
// none.
func (cf *copyFrom) lineErrorAt(line int64, err error, text []byte) error {
	where := "COPY " + cf.n.Table.Name + ", line " + strconv.FormatInt(line, 10)
	if text != nil {
		where += ": " + displayed(text)
	}
	return pgerror.WithWhere(err, where)
}

// columnError adds the context of field i of the current tuple to err.
func (cf *copyFrom) columnError(err error, i int, val []byte) error {
	return cf.columnErrorAt(cf.line, err, i, val)
}

// columnErrorAt adds the context of field i of a line to err, with its
// value unless val is nil.
func (cf *copyFrom) columnErrorAt(line int64, err error, i int, val []byte) error {
	name := cf.n.Table.Columns[cf.n.Target[i]].Name
	where := "COPY " + cf.n.Table.Name + ", line " + strconv.FormatInt(line, 10) + ", column " + name
	if val != nil {
		where += ": " + displayed(val)
	}
	return pgerror.WithWhere(err, where)
}

// displayed quotes b as a CONTEXT shows data: at most maxCopyDisplay bytes,
// cut on a character boundary and marked with "...", valid UTF-8.
func displayed(b []byte) string {
	s := string(b)
	if len(s) > maxCopyDisplay {
		cut := maxCopyDisplay
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "\uFFFD") + `"`
}

package exec

import (
	"encoding/binary"
	"io"
	"math/rand/v2"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// CopyTo is one COPY ... TO STDOUT statement: it runs its query and writes
// the rows in text, CSV or binary format, byte for byte as PostgreSQL 15
// does (copyto.c). Rows go out as the executor produces them; nothing is
// materialized.
type CopyTo struct {
	env  *Env
	n    *plan.CopyTo
	op   Operator
	opts plan.CopyOptions
	// row holds the row being encoded (after the binary header, for the
	// first row); val holds one value's text form before it is escaped.
	row, val []byte
	// codec encodes binary values.
	codec types.BinaryCodec
	// groupScan is the table scan a shuffled, sharded, resumed or
	// filtered tensor stream reads by row groups; op is nil then.
	groupScan *plan.Scan
	// lateIDs and lateBuf hold a group's passing rows' ids and values
	// when they are read by id (lateGroup).
	lateIDs []uint64
	lateBuf *types.Batch
	// fetcher reads rows by id for the stream (fetchRows); ids is the
	// scan that finds their ids (idScan).
	fetcher *storage.RowFetcher
	ids     *plan.Scan
	// limit (when limited) and offset apply to the rows of a stream whose
	// LIMIT randomOrder or plainLimit took out of its query; rng, when
	// set, draws its order instead of the generator seeded with SEED.
	limited       bool
	limit, offset int64
	rng           *rand.Rand
	// global is set for a sharded exact shuffle whose LIMIT counts the
	// rows of all shards (randomOrder): each shard draws the permutation
	// of all the rows and takes its rows of the LIMIT by position.
	global bool
	// frame is a tensor stream's frame size for BATCH_SIZE rows of its
	// fixed-width parts, mem what it holds of the server's memory budget.
	frame int64
	mem   *MemAccount
	// source is the source block of a tensor stream's first frame.
	source []byte
}

// withScanTable returns query q (a plain scan, perhaps under a row-wise
// projection: plainScan) reading table t instead.
func withScanTable(q plan.Node, t *storage.TableDesc) plan.Node {
	if p, ok := q.(*plan.Project); ok {
		pp := *p
		pp.Input = withScanTable(p.Input, t)
		return &pp
	}
	s := *q.(*plan.Scan)
	s.Table = t
	return &s
}

// NewCopyTo builds the operators of n's query; the statement fails here,
// before any data is sent, if they cannot be built.
func NewCopyTo(env *Env, n *plan.CopyTo) (*CopyTo, error) {
	c := &CopyTo{env: env}
	if n.Options.Format == plan.CopyTensor {
		var err error
		if c.frame, err = checkTensorFrame(n); err != nil {
			return nil, err
		}
	}
	if t := n.Options.Tensor; n.Options.Format == plan.CopyTensor && t.SeedSet {
		// random() in the stream's query draws from SEED: an order by
		// random() is then the same in every run and on every shard, so
		// shards dealt by position are disjoint.
		env.r = rand.New(rand.NewPCG(t.Seed, randomSeedStream))
	}
	rn, rng, limit, offset, global, err := randomOrder(env, n)
	if err != nil {
		return nil, err
	}
	c.global = global
	if rn == nil {
		if rn, limit, offset, err = plainLimit(env, n); err != nil {
			return nil, err
		}
	}
	if rn != nil {
		n, c.rng = rn, rng
		c.limited, c.limit, c.offset = limit >= 0, limit, offset
	}
	if ref := n.Options.Tensor.VersionRef; ref != "" {
		// A named version: the stream reads the version it names.
		s := plainScan(n.Query)
		if s == nil || env.Txn == nil {
			return nil, pgerror.New(pgerror.FeatureNotSupported, "COPY option VERSION is only available for a table or a query of one table's rows")
		}
		v, err := env.Txn.ResolveView(s.Table, ref)
		if err != nil {
			return nil, err
		}
		resolved := *n
		resolved.Options.Tensor.Version, resolved.Options.Tensor.VersionRef = v.AsOf, ""
		if v.Desc.ID != s.Table.ID {
			// A branch's view, or a version of one: the query reads it.
			resolved.Query = withScanTable(n.Query, v.Desc)
		}
		n = &resolved
	}
	if n.Options.Format == plan.CopyTensor && env.Txn != nil {
		// The first frame names the version the stream reads, with a
		// commit (tensor-stream.md).
		if s := plainScan(n.Query); s != nil {
			user := env.User
			if env.Role != "" {
				user = env.Role
			}
			v, id, err := env.Txn.StreamSource(s.Table, n.Options.Tensor.Version, user)
			if pgerror.GetCode(err) == pgerror.SerializationFailure {
				// The commit lost to other servers' catalog changes: the
				// stream goes on, naming its version without a commit.
				id, err = "", nil
			}
			if err != nil {
				return nil, err
			}
			c.source = streamSource(v, id, s.Table.Branch)
		}
	}
	c.n, c.opts = n, n.Options
	scan := tensorGroupScan(env, n, offset > 0)
	if err := checkTensorVersion(env, n, scan); err != nil {
		return nil, err
	}
	if scan == nil {
		if c.op, err = Build(env, borrowingQuery(n)); err != nil {
			return nil, err
		}
	} else {
		// Read row group by row group when the stream runs (tensor_shuffle.go).
		c.groupScan = scan
	}
	if c.opts.Format == plan.CopyTensor {
		if err := c.reserveFrame(c.frame); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// randomSeedStream is the PCG stream of random() in a tensor stream's
// query with SEED.
const randomSeedStream = 0xbb67ae8584caa73b

// borrowingQuery returns n's query, or for a tensor stream of a table's
// columns in order a copy of it whose scan borrows the chunks' memory:
// the stream only reads the values, and sends runs of them as they lie.
func borrowingQuery(n *plan.CopyTo) plan.Node {
	scan := plainScan(n.Query)
	if n.Options.Format != plan.CopyTensor || scan == nil || scan.Filter != nil {
		return n.Query
	}
	b := *scan
	b.Borrow = true
	if t := n.Options.Tensor; t.SharedMemory > 0 && t.Shuffle == plan.ShuffleNone && t.World == 1 {
		b.Hollow = hollowCols(n.Query, scan)
	}
	if p, ok := n.Query.(*plan.Project); ok {
		pc := *p
		pc.Input = &b
		return &pc
	}
	return &b
}

// hollowCols returns the table columns of scan that a tensor stream
// through shared memory, or a shuffled one, may read straight into its frames
// (storage.ScanOptions.Hollow): fixed-width vectors and tensors that the
// query's projection, if any, passes on as they are and uses in no
// expression.
func hollowCols(q plan.Node, scan *plan.Scan) []int {
	passed := make([]bool, len(scan.Cols))
	used := make([]bool, len(scan.Cols))
	if p, ok := q.(*plan.Project); ok {
		for _, e := range p.Exprs {
			if r, ok := e.(*plan.ColRef); ok {
				passed[r.Idx] = true
				continue
			}
			rowWiseCols(e, func(i int) { used[i] = true })
		}
	} else {
		for j := range passed {
			passed[j] = true
		}
	}
	var cols []int
	for j, c := range scan.Cols {
		if !passed[j] || used[j] || c >= len(scan.Table.Columns) {
			continue
		}
		t := scan.Table.Columns[c].Type
		if (t.Kind == types.Tensor || t.IsVector() && t.Width > 0) && !t.Ragged() {
			cols = append(cols, c)
		}
	}
	return cols
}

// rowWiseCols calls fn with the index of each column e reads (e
// plan.RowWise).
func rowWiseCols(e plan.Expr, fn func(int)) {
	switch e := e.(type) {
	case *plan.ColRef:
		fn(e.Idx)
	case *plan.Cast:
		rowWiseCols(e.X, fn)
	case *plan.Call:
		for _, a := range e.Args {
			rowWiseCols(a, fn)
		}
	case *plan.Func:
		for _, a := range e.Args {
			rowWiseCols(a, fn)
		}
	case *plan.Case:
		for _, w := range e.Whens {
			rowWiseCols(w.Cond, fn)
			rowWiseCols(w.Result, fn)
		}
		if e.Else != nil {
			rowWiseCols(e.Else, fn)
		}
	}
}

// Close releases the query's operators.
func (c *CopyTo) Close() {
	if c.op != nil {
		c.op.Close()
	}
	c.mem.Close()
}

// Run writes the rows to w, one Write per row (one per frame of rows for
// FORMAT tensor) as PostgreSQL sends one
// CopyData message per row (the binary header goes with the first row, the
// trailer alone). w must not keep the slice it is given. Run returns the
// number of rows written.
func (c *CopyTo) Run(w io.Writer) (int64, error) {
	if c.opts.Format == plan.CopyTensor {
		return c.runTensor(w)
	}
	c.row = c.row[:0]
	switch {
	case c.opts.Format == plan.CopyBinary:
		// Signature, flags (none) and header extension length (0).
		c.row = append(c.row, copySignature...)
		c.row = append(c.row, 0, 0, 0, 0, 0, 0, 0, 0)
	case c.opts.Header != plan.HeaderNone:
		if err := c.writeHeader(w); err != nil {
			return 0, err
		}
	}
	var count int64
	err := Drain(c.op, func(b *types.Batch) error {
		if err := c.env.canceled(); err != nil {
			return err
		}
		for i, n := 0, b.Len(); i < n; i++ {
			switch c.opts.Format {
			case plan.CopyBinary:
				c.row = c.appendBinaryRow(c.row, b.Cols, i)
			case plan.CopyCSV:
				c.row = c.appendCSVRow(c.row, b.Cols, i)
			default:
				c.row = c.appendTextRow(c.row, b.Cols, i)
			}
			if _, err := w.Write(c.row); err != nil {
				return err
			}
			c.row = c.row[:0]
			count++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if c.opts.Format == plan.CopyBinary {
		c.row = binary.BigEndian.AppendUint16(c.row, 0xffff)
		if _, err := w.Write(c.row); err != nil {
			return 0, err
		}
	}
	// A row of a huge value leaves a huge buffer; do not keep it.
	if cap(c.row) > maxKeptCopyBuffer {
		c.row = nil
	}
	if cap(c.val) > maxKeptCopyBuffer {
		c.val = nil
	}
	return count, nil
}

// maxKeptCopyBuffer bounds the encoding buffers a CopyTo keeps.
const maxKeptCopyBuffer = 1 << 20

// writeHeader writes the line of column names, quoted and escaped as
// values are.
func (c *CopyTo) writeHeader(w io.Writer) error {
	cols := c.n.Columns()
	for i, col := range cols {
		if i > 0 {
			c.row = append(c.row, c.opts.Delimiter)
		}
		if c.opts.Format == plan.CopyCSV {
			c.row = c.appendCSV(c.row, []byte(col.Name), false, len(cols) == 1)
		} else {
			c.row = c.appendEscaped(c.row, []byte(col.Name))
		}
	}
	c.row = append(c.row, '\n')
	_, err := w.Write(c.row)
	c.row = c.row[:0]
	return err
}

// appendTextRow appends row i in text format: values in their text output
// form, escaped, separated by the delimiter; NULL as the NULL string.
func (c *CopyTo) appendTextRow(dst []byte, cols []*types.Vec, i int) []byte {
	for j, v := range cols {
		if j > 0 {
			dst = append(dst, c.opts.Delimiter)
		}
		if v.Nulls[i] {
			dst = append(dst, c.opts.Null...)
			continue
		}
		c.val = types.AppendText(c.val[:0], v, i)
		dst = c.appendEscaped(dst, c.val)
	}
	return append(dst, '\n')
}

// appendEscaped appends val escaped for text format (CopyAttributeOutText):
// backspace, form feed, newline, carriage return, tab and vertical tab as
// \b \f \n \r \t \v; a backslash or the delimiter behind a backslash; every
// other byte as it is.
func (c *CopyTo) appendEscaped(dst, val []byte) []byte {
	delim := c.opts.Delimiter
	start := 0
	for k, b := range val {
		var esc byte
		switch b {
		case '\b':
			esc = 'b'
		case '\f':
			esc = 'f'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		case '\v':
			esc = 'v'
		case '\\':
			esc = '\\'
		default:
			if b != delim {
				continue
			}
			esc = b
		}
		dst = append(dst, val[start:k]...)
		dst = append(dst, '\\', esc)
		start = k + 1
	}
	return append(dst, val[start:]...)
}

// appendCSVRow appends row i in CSV format: values quoted where needed (or
// where FORCE_QUOTE asks), NULL as the NULL string unquoted.
func (c *CopyTo) appendCSVRow(dst []byte, cols []*types.Vec, i int) []byte {
	single := len(cols) == 1
	for j, v := range cols {
		if j > 0 {
			dst = append(dst, c.opts.Delimiter)
		}
		if v.Nulls[i] {
			dst = append(dst, c.opts.Null...)
			continue
		}
		c.val = types.AppendText(c.val[:0], v, i)
		dst = c.appendCSV(dst, c.val, c.n.ForceQuote != nil && c.n.ForceQuote[j], single)
	}
	return append(dst, '\n')
}

// appendCSV appends val as a CSV field (CopyAttributeOutCSV): quoted when
// forced, when it equals the NULL string, when it holds the delimiter, the
// quote, a newline or a carriage return, or when it is \. alone on its
// line; inside quotes the quote and the escape are preceded by the escape.
func (c *CopyTo) appendCSV(dst, val []byte, quote, single bool) []byte {
	o := &c.opts
	if !quote {
		quote = string(val) == o.Null || single && string(val) == `\.`
	}
	if !quote {
		for _, b := range val {
			if b == o.Delimiter || b == o.Quote || b == '\n' || b == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(dst, val...)
	}
	dst = append(dst, o.Quote)
	start := 0
	for k, b := range val {
		if b == o.Quote || b == o.Escape {
			dst = append(dst, val[start:k]...)
			dst = append(dst, o.Escape)
			start = k
		}
	}
	dst = append(dst, val[start:]...)
	return append(dst, o.Quote)
}

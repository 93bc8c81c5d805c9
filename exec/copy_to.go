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
	// stream is how a tensor stream reads its rows (plan.CopyTo.Stream);
	// groupScan is its table scan when it reads it by row groups or by
	// row id, op then nil.
	stream    *plan.TensorStream
	groupScan *plan.Scan
	// lateIDs and lateBuf hold a group's passing rows' ids and values
	// when they are read by id (lateGroup).
	lateIDs []uint64
	lateBuf *types.Batch
	// fetcher reads rows by id for the stream (fetchRows).
	fetcher *storage.RowFetcher
	// limit (when limited) and offset apply to the rows of a stream whose
	// LIMIT the planner took out of its query (plan.TensorStream.Limit);
	// rng, when set, draws its order instead of the generator seeded with
	// SEED.
	limited       bool
	limit, offset int64
	rng           *rand.Rand
	// global is set for a sharded exact shuffle whose LIMIT counts the
	// rows of all shards (plan.TensorStream.Global): each shard draws the
	// permutation of all the rows and takes its rows of the LIMIT by
	// position.
	global bool
	// frame is a tensor stream's frame size for BATCH_SIZE rows of its
	// fixed-width parts, mem what it holds of the server's memory budget.
	frame int64
	mem   *MemAccount
	// source is the source block of a tensor stream's first frame.
	source []byte
}

// NewCopyTo builds the operators of n's query; the statement fails here,
// before any data is sent, if they cannot be built. A tensor stream reads
// its rows as n.Stream says; what it needs of the statement's values (its
// LIMIT and OFFSET, the version a VERSION ref names) is found here.
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
	s := n.Stream
	if s == nil {
		s = &plan.TensorStream{Read: plan.ReadQuery}
	}
	if s.Limit != nil || s.Offset != nil {
		limit, offset, err := limitValues(env, s.Limit, s.Offset)
		if err != nil {
			return nil, err
		}
		c.limited, c.limit, c.offset = limit >= 0, limit, offset
	}
	c.global = s.Global
	if s.RandomOrder && !n.Options.Tensor.SeedSet {
		// Without SEED the permutation is drawn for the statement, as
		// random() draws its values.
		r := env.rng()
		c.rng = rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	}
	if ref := n.Options.Tensor.VersionRef; ref != "" {
		// A named version: the stream reads the version it names.
		if s.Scan == nil || env.Txn == nil {
			return nil, pgerror.New(pgerror.FeatureNotSupported, "COPY option VERSION is only available for a table or a query of one table's rows")
		}
		v, err := env.Txn.ResolveView(s.Scan.Table, ref)
		if err != nil {
			return nil, err
		}
		resolved := *n
		resolved.Options.Tensor.Version, resolved.Options.Tensor.VersionRef = v.AsOf, ""
		if v.Desc.ID != s.Scan.Table.ID {
			// A branch's view, or a version of one: the stream reads it.
			resolved.Query, resolved.Stream = withTable(n.Query, s, v.Desc)
		}
		n = &resolved
		s = n.Stream
	}
	if n.Options.Format == plan.CopyTensor && env.Txn != nil && s.Scan != nil {
		// The first frame names the version the stream reads, with a
		// commit (tensor-stream.md).
		user := env.User
		if env.Role != "" {
			user = env.Role
		}
		v, id, err := env.Txn.StreamSource(s.Scan.Table, n.Options.Tensor.Version, user)
		if pgerror.GetCode(err) == pgerror.SerializationFailure {
			// The commit lost to other servers' catalog changes: the
			// stream goes on, naming its version without a commit.
			id, err = "", nil
		}
		if err != nil {
			return nil, err
		}
		c.source = streamSource(v, id, s.Scan.Table.Branch)
	}
	c.n, c.opts, c.stream = n, n.Options, s
	if err := checkTensorVersion(env, n, s.Scan); err != nil {
		return nil, err
	}
	if s.Read == plan.ReadQuery {
		var err error
		if c.op, err = Build(env, n.Query); err != nil {
			return nil, err
		}
	} else {
		// Read row group by row group, or by row id, when the stream
		// runs (tensor_shuffle.go).
		c.groupScan = s.Scan
	}
	if c.opts.Format == plan.CopyTensor {
		if err := c.reserveFrame(c.frame); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// withTable returns query q and stream s (whose Scan is q's, q a plain
// scan) reading table t instead: the version of another branch that a
// VERSION ref names.
func withTable(q plan.Node, s *plan.TensorStream, t *storage.TableDesc) (plan.Node, *plan.TensorStream) {
	scan := *s.Scan
	scan.Table = t
	if p, ok := q.(*plan.Project); ok {
		pp := *p
		pp.Input = &scan
		q = &pp
	} else {
		q = &scan
	}
	ws := *s
	ws.Scan = &scan
	if s.IDScan == s.Scan {
		ws.IDScan = &scan
	} else if s.IDScan != nil {
		ids := *s.IDScan
		ids.Table = t
		ws.IDScan = &ids
	}
	return q, &ws
}

// randomSeedStream is the PCG stream of random() in a tensor stream's
// query with SEED.
const randomSeedStream = 0xbb67ae8584caa73b

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

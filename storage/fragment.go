package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/deeplaked/deeplaked/types"
)

// A fragment is a set of rows of one table written together (by a flush, a
// large transaction or a compaction), sorted by row id. Each of its columns
// is cut into chunks independently, by bytes, so a wide tensor column has
// many chunks where a narrow integer column has one. Besides the table's
// columns a fragment stores the hidden column _rowid (int8) and, unless all
// its rows were committed by one version, _xmin (int8): the version that
// committed each row. See docs/storage-format.md.

// fragChunk locates one chunk of one column of a fragment.
type fragChunk struct {
	// Start is the fragment row of the chunk's first row; Rows its count.
	Start, Rows int64
	// Seq names the object (fragChunkKey); Size is its stored size.
	Seq  uint32
	Size int64
	Zone ZoneMap
}

// fragment describes one fragment. Descriptors are immutable once
// committed.
type fragment struct {
	ID     uint64
	Rows   int64
	MinRow uint64
	MaxRow uint64
	// Xmin is the committing version of every row, or 0 when rows differ
	// and the _xmin column holds it per row.
	Xmin uint64
	// Cols holds the chunks of each stored column: the table's columns in
	// order, then _rowid, then _xmin when Xmin is 0.
	Cols [][]fragChunk
	// owner is the table the fragment belongs to, when known (listed from
	// the catalog): a branch's view reads fragments of other tables.
	owner uint64
}

// table returns the table the fragment belongs to: its owner, else def.
func (f *fragment) table(def uint64) uint64 {
	if f.owner != 0 {
		return f.owner
	}
	return def
}

const fragDescVersion = 1

// hiddenRowID and hiddenXmin are the stored column ordinals of _rowid and
// _xmin for a table of n columns.
func hiddenRowID(n int) int { return n }
func hiddenXmin(n int) int  { return n + 1 }

// fragChunkKey is the object key of chunk seq of stored column col of
// fragment frag. Names have fixed widths, so no key is a prefix of another.
func fragChunkKey(table, frag uint64, col int, seq uint32) string {
	return fmt.Sprintf("tables/%d/frags/%016x/%04x-%08x.dlc", table, frag, col, seq)
}

func fragObjectPrefix(table, frag uint64) string {
	return fmt.Sprintf("tables/%d/frags/%016x/", table, frag)
}

func tableFragsPrefix(table uint64) string {
	return "tables/" + strconv.FormatUint(table, 10) + "/frags/"
}

// chunkIndex returns the index of the chunk of col holding fragment row r.
func (f *fragment) chunkIndex(col int, r int64) int {
	cs := f.Cols[col]
	return sort.Search(len(cs), func(i int) bool { return cs[i].Start+cs[i].Rows > r })
}

// storedBytes is the total stored size of the fragment's chunks.
func (f *fragment) storedBytes() int64 {
	var n int64
	for _, cs := range f.Cols {
		for _, c := range cs {
			n += c.Size
		}
	}
	return n
}

// appendBinary appends the descriptor's encoding: a version byte, then
// uvarints and zone maps (docs/storage-format.md).
func (f *fragment) appendBinary(dst []byte) []byte {
	dst = append(dst, fragDescVersion)
	dst = binary.AppendUvarint(dst, f.ID)
	dst = binary.AppendUvarint(dst, uint64(f.Rows))
	dst = binary.AppendUvarint(dst, f.MinRow)
	dst = binary.AppendUvarint(dst, f.MaxRow)
	dst = binary.AppendUvarint(dst, f.Xmin)
	dst = binary.AppendUvarint(dst, uint64(len(f.Cols)))
	for _, cs := range f.Cols {
		dst = binary.AppendUvarint(dst, uint64(len(cs)))
		for _, c := range cs {
			dst = binary.AppendUvarint(dst, uint64(c.Rows))
			dst = binary.AppendUvarint(dst, uint64(c.Seq))
			dst = binary.AppendUvarint(dst, uint64(c.Size))
			dst = c.Zone.AppendBinary(dst)
		}
	}
	return dst
}

// decodeFragment decodes a descriptor of a table with ncols columns.
func decodeFragment(b []byte, ncols int) (*fragment, error) {
	bad := func(what string) (*fragment, error) {
		return nil, corruptionf("fragment descriptor: %s", what)
	}
	if len(b) == 0 || b[0] != fragDescVersion {
		return bad("unknown version")
	}
	b = b[1:]
	var vals [6]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return bad("truncated header")
		}
		vals[i], b = v, b[n:]
	}
	f := &fragment{ID: vals[0], Rows: int64(vals[1]), MinRow: vals[2], MaxRow: vals[3], Xmin: vals[4]}
	want := ncols + 1
	if f.Xmin == 0 {
		want++
	}
	if vals[5] != uint64(want) || f.Rows < 0 {
		return bad(fmt.Sprintf("%d columns, want %d", vals[5], want))
	}
	f.Cols = make([][]fragChunk, want)
	for c := range f.Cols {
		nc, n := binary.Uvarint(b)
		if n <= 0 || nc > uint64(len(b)) {
			return bad("truncated chunk list")
		}
		b = b[n:]
		cs := make([]fragChunk, nc)
		var start int64
		for i := range cs {
			var v [3]uint64
			for k := range v {
				x, n := binary.Uvarint(b)
				if n <= 0 {
					return bad("truncated chunk")
				}
				v[k], b = x, b[n:]
			}
			z, rest, err := DecodeZoneMap(b)
			if err != nil {
				return nil, err
			}
			b = rest
			cs[i] = fragChunk{Start: start, Rows: int64(v[0]), Seq: uint32(v[1]), Size: int64(v[2]), Zone: z}
			start += int64(v[0])
		}
		if start != f.Rows {
			return bad(fmt.Sprintf("column %d covers %d rows of %d", c, start, f.Rows))
		}
		f.Cols[c] = cs
	}
	if len(b) != 0 {
		return bad("trailing bytes")
	}
	return f, nil
}

// fragWriter builds a fragment: rows are appended in row-id order and each
// column's pending rows become a chunk object as soon as they reach the
// table's chunk size, so memory stays bounded by about one chunk per column
// (plus chunks being encoded). Encoding and uploads run in parallel.
type fragWriter struct {
	db     *DB
	t      *TableDesc
	id     uint64
	ctx    context.Context
	target int64
	types  []types.Type
	comps  []Compression
	// bufs holds each stored column's rows not yet in a chunk; bufStart
	// is the fragment row of bufs[c]'s first row.
	bufs     []*types.Vec
	bufStart []int64
	chunks   [][]fragChunk
	seqs     []uint32
	rows     int64
	minRow   uint64
	maxRow   uint64
	perRow   bool // the _xmin column is stored

	mu     sync.Mutex
	wg     sync.WaitGroup
	sem    chan struct{}
	err    error
	frees  []*types.Vec
	objSum int64
}

// newFragWriter starts a fragment of table t. perRowXmin stores the _xmin
// column (flushes and compactions); otherwise the fragment's rows all get
// the version that commits it.
func (db *DB) newFragWriter(ctx context.Context, t *TableDesc, perRowXmin bool) (*fragWriter, error) {
	id, err := db.alloc(fragCounter, 1)
	if err != nil {
		return nil, err
	}
	n := len(t.Columns) + 1
	if perRowXmin {
		n++
	}
	w := &fragWriter{
		db: db, t: t, id: id, ctx: ctx, perRow: perRowXmin,
		target:   t.chunkSize(),
		types:    make([]types.Type, n),
		comps:    make([]Compression, n),
		bufs:     make([]*types.Vec, n),
		bufStart: make([]int64, n),
		chunks:   make([][]fragChunk, n),
		seqs:     make([]uint32, n),
		sem:      make(chan struct{}, 2*runtime.GOMAXPROCS(0)+2),
	}
	for c := range w.types {
		if c < len(t.Columns) {
			w.types[c] = t.Columns[c].Type
			w.comps[c] = t.columnCompression(c)
		} else {
			w.types[c] = types.TypInt8
			w.comps[c] = CompressionLZ4
		}
		w.bufs[c] = types.NewVec(w.types[c], 1024)
	}
	db.inflight.add(fragObjectPrefix(t.ID, id))
	return w, nil
}

// add appends the rows of b (one Vec per table column) with their row ids
// and, for a per-row writer, their versions. Row ids must increase across
// calls.
func (w *fragWriter) add(b *types.Batch, ids []uint64, xmins []uint64) error {
	n := len(ids)
	if n == 0 {
		return w.failed()
	}
	if w.rows == 0 {
		w.minRow = ids[0]
	}
	w.maxRow = ids[n-1]
	nt := len(w.t.Columns)
	for c := range w.bufs {
		switch {
		case c < nt:
			v := w.reserve(c, b.Cols[c], n)
			appendRange(v, b.Cols[c], 0, n)
		case c == hiddenRowID(nt):
			v := w.reserve(c, nil, n)
			for _, id := range ids {
				v.AppendInt(int64(id))
			}
		default:
			v := w.reserve(c, nil, n)
			for _, x := range xmins {
				v.AppendInt(int64(x))
			}
		}
	}
	w.rows += int64(n)
	for c := range w.bufs {
		if err := w.cut(c, false); err != nil {
			return err
		}
	}
	return w.failed()
}

// reserve makes room in column c's pending rows for the first n rows of
// src (nil: n int8 values) and returns the Vec that holds them. A Vec
// that grows by doubling to a chunk of millions of rows copies them all
// about twice, and its spare capacity is fresh memory the kernel faults
// in; instead it doubles up to an eighth of the chunk it is to become
// (estimated from src's rows) and then takes the whole chunk at once:
// the Vec of a chunk encoded since, if there is one, else fresh memory.
func (w *fragWriter) reserve(c int, src *types.Vec, n int) *types.Vec {
	v := w.bufs[c]
	raw := int64(8 * n)
	data := 0
	if src != nil {
		raw = chunkRawSize(v.Type, src, 0, n)
		if v.Type.Phys() == types.PhysBytes {
			data = len(v.Bytes.Data) + int(src.Bytes.Offsets[n]-src.Bytes.Offsets[0])
		}
	}
	rows := v.Len() + n
	if !vecFits(v, rows, data) {
		if f := w.takeFree(c, rows, data); f != nil {
			appendRange(f, v, 0, v.Len())
			w.bufs[c], v = f, f
		}
	}
	est := rows
	if raw > 0 {
		est = max(rows, int(w.target*int64(n)/raw))
	}
	v.Nulls = growTo(v.Nulls, rows, est)
	switch v.Type.Phys() {
	case types.PhysBool:
		v.Bools = growTo(v.Bools, rows, est)
	case types.PhysInt:
		v.Ints = growTo(v.Ints, rows, est)
	case types.PhysFloat:
		v.Floats = growTo(v.Floats, rows, est)
	default:
		if len(v.Bytes.Offsets) == 0 {
			v.Bytes.Offsets = append(v.Bytes.Offsets, 0)
		}
		v.Bytes.Data = growTo(v.Bytes.Data, data, max(data, int(w.target)))
		v.Bytes.Offsets = growTo(v.Bytes.Offsets, rows+1, est+1)
	}
	return v
}

// vecFits reports whether v has room for rows rows and, of variable
// width, data bytes.
func vecFits(v *types.Vec, rows, data int) bool {
	if cap(v.Nulls) < rows {
		return false
	}
	switch v.Type.Phys() {
	case types.PhysBool:
		return cap(v.Bools) >= rows
	case types.PhysInt:
		return cap(v.Ints) >= rows
	case types.PhysFloat:
		return cap(v.Floats) >= rows
	}
	return cap(v.Bytes.Data) >= data && cap(v.Bytes.Offsets) > rows
}

// takeFree returns an empty Vec of column c's type, of an encoded chunk,
// with room for rows rows and data bytes, or nil.
func (w *fragWriter) takeFree(c, rows, data int) *types.Vec {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.frees) - 1; i >= 0; i-- {
		if v := w.frees[i]; v.Type.Equal(w.types[c]) {
			v.Reset()
			if vecFits(v, rows, data) {
				w.frees = append(w.frees[:i], w.frees[i+1:]...)
				return v
			}
		}
	}
	return nil
}

// growTo returns s with room for need elements: twice its capacity, or
// est and an eighth more once that is within eight times of it.
func growTo[T any](s []T, need, est int) []T {
	if need <= cap(s) {
		return s
	}
	c := max(need, 2*cap(s))
	if 8*c >= est {
		c = max(need, est+est/8)
	}
	// NB: not slices.Grow, whose append rounds a doubling up by half.
	g := make([]T, len(s), c)
	copy(g, s)
	return g
}

// cut turns column c's pending rows into chunks of about the target size;
// with all set it writes whatever is pending.
func (w *fragWriter) cut(c int, all bool) error {
	for {
		v := w.bufs[c]
		n := v.Len()
		if n == 0 {
			return nil
		}
		k := n
		if chunkRawSize(w.types[c], v, 0, n) < w.target {
			if !all {
				return nil
			}
		} else {
			// The fewest rows that reach the target, at least one.
			k = sort.Search(n, func(i int) bool { return chunkRawSize(w.types[c], v, 0, i+1) >= w.target }) + 1
		}
		rest := w.newVec(c)
		if k < n {
			appendRange(rest, v, k, n)
			v.Truncate(k)
		}
		ck := fragChunk{Start: w.bufStart[c], Rows: int64(k), Seq: w.seqs[c]}
		w.seqs[c]++
		w.bufStart[c] += int64(k)
		w.bufs[c] = rest
		w.mu.Lock()
		idx := len(w.chunks[c])
		w.chunks[c] = append(w.chunks[c], ck)
		w.mu.Unlock()
		w.encode(c, idx, ck.Seq, v)
		if err := w.failed(); err != nil {
			return err
		}
	}
}

func (w *fragWriter) newVec(c int) *types.Vec {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.frees) - 1; i >= 0; i-- {
		if v := w.frees[i]; v.Type.Equal(w.types[c]) {
			w.frees = append(w.frees[:i], w.frees[i+1:]...)
			v.Reset()
			return v
		}
	}
	return types.NewVec(w.types[c], 1024)
}

// encode compresses and uploads chunk idx of column c in the background.
func (w *fragWriter) encode(c, idx int, seq uint32, v *types.Vec) {
	w.sem <- struct{}{} // bounds the chunks in flight, hence memory
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		buf := getChunkBuf()
		defer putChunkBuf(buf)
		// Compression takes a CPU slot; the upload (a file write and
		// fsync, or a PUT) does not, so other chunks compress meanwhile.
		w.db.encodeSem <- struct{}{}
		data, zone, err := encodeColChunk((*buf)[:0], w.types[c], v, 0, v.Len(), w.comps[c])
		<-w.db.encodeSem
		*buf = data
		w.mu.Lock()
		w.frees = append(w.frees, v)
		w.mu.Unlock()
		if err == nil {
			key := fragChunkKey(w.t.ID, w.id, c, seq)
			if perr := w.db.store.Put(w.ctx, key, data); perr != nil {
				err = ioErrorf(perr, "writing chunk of table %q", w.t.Name)
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.chunks[c][idx].Size = int64(len(data))
		w.chunks[c][idx].Zone = zone
		w.objSum += int64(len(data))
	}()
}

func (w *fragWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// finish writes the pending rows and waits for every upload; the returned
// descriptor is durable in the object store but not yet part of the table.
func (w *fragWriter) finish() (*fragment, error) {
	for c := range w.bufs {
		if err := w.cut(c, true); err != nil {
			w.wg.Wait()
			return nil, err
		}
	}
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return nil, err
	}
	return &fragment{ID: w.id, Rows: w.rows, MinRow: w.minRow, MaxRow: w.maxRow, Cols: w.chunks}, nil
}

// view returns a descriptor of what the writer holds so far, for its own
// transaction's reads: uploaded chunks plus the pending rows, as in-memory
// chunks (mem). The writer must not be used while the view is read.
func (w *fragWriter) view() (*fragment, []*types.Vec, error) {
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return nil, nil, err
	}
	f := &fragment{ID: w.id, Rows: w.rows, MinRow: w.minRow, MaxRow: w.maxRow, Cols: make([][]fragChunk, len(w.chunks))}
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.chunks {
		f.Cols[c] = w.chunks[c]
		if w.bufs[c].Len() > 0 {
			f.Cols[c] = append(f.Cols[c][:len(f.Cols[c]):len(f.Cols[c])], fragChunk{Start: w.bufStart[c], Rows: int64(w.bufs[c].Len()), Seq: memChunkSeq})
		}
	}
	return f, w.bufs, nil
}

// memChunkSeq marks the in-memory chunk of a writer's view.
const memChunkSeq = ^uint32(0)

// abort waits for uploads and deletes what the writer stored.
func (w *fragWriter) abort() {
	w.wg.Wait()
	w.db.inflight.remove(fragObjectPrefix(w.t.ID, w.id))
	ctx := context.Background()
	for c, cs := range w.chunks {
		for _, ck := range cs {
			_ = w.db.store.Delete(ctx, fragChunkKey(w.t.ID, w.id, c, ck.Seq))
		}
	}
}

// done releases the writer's claim on its objects once its fragment is
// committed (or abandoned to VACUUM).
func (w *fragWriter) done() { w.db.inflight.remove(fragObjectPrefix(w.t.ID, w.id)) }

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

func getChunkBuf() *[]byte  { return chunkBufs.Get().(*[]byte) }
func putChunkBuf(b *[]byte) { chunkBufs.Put(b) }

// inflightSet holds the object prefixes of fragments being written, which
// VACUUM must not collect.
type inflightSet struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *inflightSet) add(p string) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[string]int)
	}
	s.m[p]++
	s.mu.Unlock()
}

func (s *inflightSet) remove(p string) {
	s.mu.Lock()
	if s.m[p]--; s.m[p] <= 0 {
		delete(s.m, p)
	}
	s.mu.Unlock()
}

func (s *inflightSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.m {
		if len(key) >= len(p) && key[:len(p)] == p {
			return true
		}
	}
	return false
}

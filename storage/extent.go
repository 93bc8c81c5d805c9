package storage

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Hollow columns (ScanOptions.Hollow) are for a reader that would only
// copy a fixed-width column's values somewhere else, as a tensor stream
// through shared memory, or a shuffled one, does: it reads them straight
// to where they go
// with ReadExtent, instead of the scan reading each chunk into memory of
// its own first. A hollow window holds the rows' NULL flags and offsets
// but none of their bytes; Scanner.Extent tells where they are stored.

// hollowChunk is a chunk of a hollow column whose values are not read:
// an uncompressed fixed-width chunk without NULLs in a store that reads
// byte ranges into a caller's buffer.
type hollowChunk struct {
	key   string
	table string
	h     colChunkHeader
	// rows is the rows per checksum block.
	rows int
}

// Extent is a run of stored values of a hollow column: Rows values from
// row Row of one chunk, back to back, Len bytes in all. It stays readable
// while the transaction that scanned it is open, as the scan's chunks do
// (compaction, VACUUM and DROP TABLE keep the objects an open snapshot
// reads).
type Extent struct {
	c    *hollowChunk
	Row  int
	Rows int
}

// Len returns the length of the extent's values in bytes.
func (e Extent) Len() int { return e.Rows * e.c.h.shape.width }

// Slice returns rows [i, j) of e.
func (e Extent) Slice(i, j int) Extent { return Extent{c: e.c, Row: e.Row + i, Rows: j - i} }

// Width returns the bytes of one value.
func (e Extent) Width() int { return e.c.h.shape.width }

// BlockRows returns the rows of a checksum block of e's chunk: an extent
// that starts or ends inside a block costs a read of the whole block.
func (e Extent) BlockRows() int { return e.c.rows }

// Next reports whether f's rows follow e's in the same chunk.
func (e Extent) Next(f Extent) bool { return e.c == f.c && e.Row+e.Rows == f.Row }

// hollowChunkOf returns the hollow form of chunk key, or nil when its
// values must be read (compressed, NULLs, another layout, or a store
// without byte-range reads into a buffer).
func (db *DB) hollowChunkOf(ctx context.Context, t *TableDesc, key string, typ types.Type, ck fragChunk) (*hollowChunk, error) {
	if _, ok := db.store.(rangeIntoGetter); !ok {
		return nil, nil
	}
	h, ok := db.headers.get(key)
	if !ok {
		var err error
		if h, err = db.readChunkHeader(ctx, t, key, typ); err != nil {
			return nil, err
		}
		db.headers.put(key, h)
	}
	w := h.shape.width
	if h.comp != CompressionNone || h.shape.layout != layoutFixed || h.nulls != nil || w <= 0 ||
		h.blockLen < w || h.blockLen%w != 0 || h.storedLen != h.rows*w || int64(h.rows) != ck.Rows {
		return nil, nil
	}
	return &hollowChunk{key: key, table: t.Name, h: h, rows: h.blockLen / w}, nil
}

// readChunkHeader reads and parses the header of the column chunk stored
// under key with byte-range reads.
func (db *DB) readChunkHeader(ctx context.Context, t *TableDesc, key string, typ types.Type) (colChunkHeader, error) {
	head, err := db.store.GetRange(ctx, key, 0, colChunkFixedLen)
	if err != nil {
		return colChunkHeader{}, ioErrorf(err, "reading table %q", t.Name)
	}
	n, err := colChunkHeaderSize(head)
	if err != nil {
		return colChunkHeader{}, inTable(err, "table %q, object %s", t.Name, key)
	}
	if n > len(head) {
		if head, err = db.store.GetRange(ctx, key, 0, int64(n)); err != nil {
			return colChunkHeader{}, ioErrorf(err, "reading table %q", t.Name)
		}
	}
	h, err := parseColChunkHeader(head, typ)
	if err != nil {
		return colChunkHeader{}, inTable(err, "table %q, object %s", t.Name, key)
	}
	db.stats.RangeReads.Add(1)
	db.stats.RangeBytes.Add(int64(len(head)))
	return h, nil
}

// hollowVec makes v a chunk of rows values of width bytes that holds no
// bytes: no NULLs, offsets i·width, empty Data (its buffer kept for
// reuse).
func hollowVec(v *types.Vec, typ types.Type, rows, width int) {
	v.SetType(typ)
	v.Reset()
	v.Nulls = slices.Grow(v.Nulls, rows)[:rows]
	clear(v.Nulls)
	v.Bytes.Offsets = v.Bytes.Offsets[:1]
	for i := 1; i <= rows; i++ {
		v.Bytes.Offsets = append(v.Bytes.Offsets, int32(i*width))
	}
	v.Bytes.Data = v.Bytes.Data[:0]
}

// extentPiece is the most bytes of whole blocks ReadExtent reads at once.
const extentPiece = 1 << 20

// ReadExtent reads e's values into dst (e.Len() bytes) and checks them
// against their chunk's checksums. A block only partly in e is read whole
// into scratch (grown as needed) to be checked. Checksum mismatches and
// short objects are ErrCorruption (XX001).
func (db *DB) ReadExtent(ctx context.Context, e Extent, dst []byte, scratch *[]byte) error {
	c := e.c
	h := &c.h
	w := h.shape.width
	if len(dst) != e.Len() || e.Row < 0 || e.Rows < 0 || e.Row+e.Rows > h.rows {
		return pgerror.AssertionFailedf("storage: extent rows [%d, %d) of a %d-row chunk into %d bytes", e.Row, e.Row+e.Rows, h.rows, len(dst))
	}
	rg := db.store.(rangeIntoGetter)
	read := func(off int64, into []byte) error {
		if len(into) == 0 {
			return nil
		}
		got, err := rg.GetRangeInto(ctx, c.key, int64(h.headerLen)+off, int64(len(into)), into[:0])
		if err != nil {
			if ctx.Err() != nil {
				return pgerror.New(pgerror.QueryCanceled, "scan closed")
			}
			return ioErrorf(err, "reading table %q", c.table)
		}
		db.stats.ExtentBytes.Add(int64(len(got)))
		if len(got) != len(into) {
			return inTable(corruptionf("column chunk: %d bytes where %d were expected", int(off)+len(got), int(off)+len(into)), "table %q, object %s", c.table, c.key)
		}
		if &got[0] != &into[0] {
			copy(into, got)
		}
		return nil
	}
	check := func(k int, b []byte) error {
		if crc32.Checksum(b, crc32c) != binary.LittleEndian.Uint32(h.crcs[4*k:]) {
			return inTable(corruptionf("column chunk: checksum mismatch in data block %d", k), "table %q, object %s", c.table, c.key)
		}
		return nil
	}
	lo, hi := e.Row, e.Row+e.Rows
	for r := lo; r < hi; {
		k := r / c.rows
		bs, be := k*c.rows, min((k+1)*c.rows, h.rows)
		if bs < lo || be > hi {
			// A block only partly in the extent: read it whole to check it.
			n := (be - bs) * w
			if cap(*scratch) < n {
				*scratch = make([]byte, n)
			}
			blk := (*scratch)[:n]
			if err := read(int64(bs*w), blk); err != nil {
				return err
			}
			if err := check(k, blk); err != nil {
				return err
			}
			end := min(be, hi)
			copy(dst[(r-lo)*w:(end-lo)*w], blk[(r-bs)*w:(end-bs)*w])
			r = end
			continue
		}
		// Whole blocks, up to extentPiece bytes, in one read.
		end := be
		for end < hi && min(end+c.rows, h.rows) <= hi && (min(end+c.rows, h.rows)-r)*w <= extentPiece {
			end = min(end+c.rows, h.rows)
		}
		out := dst[(r-lo)*w : (end-lo)*w]
		if err := read(int64(r*w), out); err != nil {
			return err
		}
		for b := 0; b < len(out); b += c.rows * w {
			if err := check(k, out[b:min(b+c.rows*w, len(out))]); err != nil {
				return err
			}
			k++
		}
		r = end
	}
	return nil
}

// Extents sets dst[h] to where the values of table column cols[h] (a
// fixed-width one) of the rows ids are stored, for ReadExtent: a one-row
// extent for each row in a chunk that could be hollow (see hollowChunkOf;
// with rowBlocks, only chunks whose checksum blocks hold one row each),
// the zero Extent for a row whose value must be fetched. Each row is
// located once for all the columns. ids must be rows of the fetcher's
// snapshot, as Fetch finds them.
func (rf *RowFetcher) Extents(ids []uint64, cols []int, rowBlocks bool, dst [][]Extent) error {
	for h := range cols {
		dst[h] = dst[h][:0]
	}
	for _, id := range ids {
		x, err := rf.where(id)
		if err != nil {
			return err
		}
		for h, col := range cols {
			e, err := rf.extentAt(x, col, rowBlocks)
			if err != nil {
				return err
			}
			dst[h] = append(dst[h], e)
		}
	}
	return nil
}

// extentAt returns the extent of column col's value of the row at x, or
// the zero Extent when it must be fetched.
func (rf *RowFetcher) extentAt(x fragRow, col int, rowBlocks bool) (Extent, error) {
	if x.r < 0 || x.mem != nil {
		return Extent{}, nil
	}
	ck := x.fr.Cols[col][x.fr.chunkIndex(col, x.r)]
	if ck.Seq == memChunkSeq {
		return Extent{}, nil
	}
	key := rf.f.key(x.fr, col, ck.Seq)
	hc, ok := rf.hollow[key]
	if !ok {
		var err error
		if hc, err = rf.txn.db.hollowChunkOf(context.Background(), rf.t, key, rf.t.Columns[col].Type, ck); err != nil {
			return Extent{}, err
		}
		if hc != nil && rowBlocks && hc.rows != 1 {
			hc = nil
		}
		if hc != nil {
			rf.txn.db.stats.HollowChunks.Add(1)
		}
		if rf.hollow == nil {
			rf.hollow = make(map[string]*hollowChunk)
		}
		rf.hollow[key] = hc
	}
	if hc == nil {
		return Extent{}, nil
	}
	return Extent{c: hc, Row: int(x.r - ck.Start), Rows: 1}, nil
}

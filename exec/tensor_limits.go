package exec

import (
	"math"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// The bounds of a tensor stream's memory (docs/tensor-stream.md,
// "Limits"): a frame is at most tensorFrameLimit bytes, checked for
// BATCH_SIZE rows of the columns' fixed-width parts before the first frame
// is built and, for ragged and bytes columns, whose values grow with the
// data, as each frame fills; a frame, and the shuffle buffer as it fills,
// take their memory from the server's budget (Env.Mem); an exact shuffle
// holds at most maxShuffleIDs row ids.

// tensorFrameLimit is the largest frame: one CopyData message, whose
// length word counts itself, within PostgreSQL's 1 GB message limit
// (MaxAllocSize). A variable for tests.
var tensorFrameLimit int64 = types.MaxValueBytes - 4

// maxShuffleIDs bounds the rows an exact shuffle permutes: their ids (or
// their offsets in its temporary file) take 8 bytes each, 1 GB in all (a
// variable for tests).
var maxShuffleIDs = maxHeldBytes / 8

// frameRoom is what the values of a frame's ragged and bytes columns may
// still take (left) before the frame passes tensorFrameLimit; over is the
// column whose value did not fit. The columns of a frame share one.
type frameRoom struct {
	left, full int64
	// over is the first column whose value did not fit, at the frame's
	// row at.
	over *tensorCol
	at   int
	// rows is the frame's BATCH_SIZE, for the error.
	rows int
}

// take reports whether n more bytes of c's values, those of the frame's
// row row, fit, and counts them.
func (r *frameRoom) take(c *tensorCol, n, row int) bool {
	if r == nil {
		return true
	}
	if int64(n) > r.left {
		if r.over == nil {
			r.over, r.at = c, row
		}
		return false
	}
	r.left -= int64(n)
	return true
}

// rowWidth is the bytes one row of column c adds to a frame whatever its
// value: the value of a fixed column (saturated at math.MaxInt64), the
// offset and shape of a ragged one, the offset of a bytes column. The
// validity bit and the padding are counted by frameBytes.
func (c *tensorCol) rowWidth() int64 {
	switch c.kind {
	case tensorKindBytes:
		return 8
	case tensorKindRagged:
		return 8 + 4*int64(len(c.dims))
	}
	if n, fixed := c.typ.RowBytes(); fixed {
		return n
	}
	return int64(c.size) // a scalar
}

// frameBytes returns the bytes a frame of rows rows of cols takes without
// the values of its ragged and bytes columns (saturated at
// math.MaxInt64), and the column that takes the most of them a row.
func frameBytes(cols []*tensorCol, rows int64) (n int64, widest *tensorCol) {
	hl := int64(tensorHeaderLen)
	for _, c := range cols {
		hl += 2 + int64(len(c.name)) + 4 + 4*int64(len(c.dims)) + 4*16
	}
	n = int64(alignUp(int(hl)))
	add := func(k int64) {
		if n > math.MaxInt64-k {
			n = math.MaxInt64
		} else {
			n += k
		}
	}
	for _, c := range cols {
		w := c.rowWidth()
		if widest == nil || w > widest.rowWidth() {
			widest = c
		}
		// Each buffer is padded to 64 bytes: the validity, the offsets
		// (one more than the rows) and the values.
		add(4*tensorAlign + (rows+7)/8)
		if c.kind != tensorKindFixed {
			add(8)
		}
		if w > 0 && rows > math.MaxInt64/w {
			add(math.MaxInt64)
		} else {
			add(rows * w)
		}
	}
	return n, widest
}

// checkTensorFrame refuses, before anything is sent, a stream whose
// frames of BATCH_SIZE rows would pass tensorFrameLimit with the
// fixed-width parts of their columns alone; it returns the bytes of such
// a frame.
func checkTensorFrame(n *plan.CopyTo) (int64, error) {
	rows := int64(n.Options.Tensor.BatchSize)
	pc := n.Columns()
	cols := make([]*tensorCol, len(pc))
	for i, c := range pc {
		cols[i] = newTensorCol(c.Name, c.Type)
	}
	size, widest := frameBytes(cols, rows)
	if size <= tensorFrameLimit {
		return size, nil
	}
	what := "more than 9223372036854775807 bytes"
	if size < math.MaxInt64 {
		what = strconv.FormatInt(size, 10) + " bytes"
	}
	err := pgerror.Newf(pgerror.ProgramLimitExceeded,
		"tensor stream frame of %d rows of column %s (%s, %d bytes a row) would be %s, over the %s frame limit; lower BATCH_SIZE",
		rows, widest.name, widest.typ, widest.rowWidth(), what, sizeText(tensorFrameLimit))
	// The most rows a frame can take, for the hint.
	lo, hi := int64(0), rows
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s, _ := frameBytes(cols, mid); s <= tensorFrameLimit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return 0, err.WithHint("Not even one row of these columns fits in a frame.")
	}
	return 0, err.WithHint("Frames of up to %d rows fit.", lo)
}

// reserveFrame takes the stream's frame memory, bytes, from the server's
// budget before the first frame is built (53200 past it); the frame's
// buffers are reused from frame to frame, so one reservation holds for
// the whole stream, given back by Close.
func (c *CopyTo) reserveFrame(bytes int64) error {
	c.mem = c.env.account("a tensor stream's frame")
	return c.mem.Grow(bytes)
}

// limitFrames makes f's frames of rows rows stop at tensorFrameLimit: the
// values of its ragged and bytes columns may take what the fixed-width
// parts of such a frame leave (checkTensorFrame has made sure that they
// fit).
func (f *tensorFrames) limitFrames(rows int) {
	size, _ := frameBytes(f.cols, int64(rows))
	f.room = &frameRoom{full: max(tensorFrameLimit-size, 0), rows: rows}
	f.room.left = f.room.full
	for _, c := range f.cols {
		if c.kind != tensorKindFixed {
			c.room = f.room
		}
	}
}

// overLimit returns the error of a frame whose ragged or bytes values did
// not fit (see frameRoom), nil if they all did.
func (f *tensorFrames) overLimit() error {
	if f.room == nil || f.room.over == nil {
		return nil
	}
	c := f.room.over
	return pgerror.Newf(pgerror.ProgramLimitExceeded,
		"tensor stream frame of column %s (%s) would pass the %s frame limit after %d of its %d rows; lower BATCH_SIZE",
		c.name, c.typ, sizeText(tensorFrameLimit), f.room.at, f.room.rows)
}

// checkShuffleBuffer takes what the shuffle buffer's slots hold from the
// server's memory budget as they fill; past it the stream fails with
// 53200, saying how far the buffer got.
func (ts *tensorStream) checkShuffleBuffer() error {
	st := ts.store
	err := ts.bufMem.Resize(st.held)
	if err == nil {
		return nil
	}
	if pe, ok := err.(*pgerror.Error); ok {
		return pe.WithHint("The shuffle buffer of %d rows held %d bytes in its first %d rows; lower SHUFFLE_BUFFER.",
			ts.opts.ShuffleBuffer, st.held, st.alloc)
	}
	return err
}

// checkShuffleIDs refuses an exact shuffle of more than maxShuffleIDs rows.
func checkShuffleIDs(n int) error {
	if n <= maxShuffleIDs {
		return nil
	}
	return pgerror.Newf(pgerror.ProgramLimitExceeded,
		"SHUFFLE 'exact' of more than %d rows would hold more than %s of row ids; use SHUFFLE true, or SHARD to split the rows", maxShuffleIDs, sizeText(int64(maxShuffleIDs)*8))
}

// sizeText is n as a limit's size: "1 GB" for the limits near 1 GB
// (PostgreSQL's own words for its 1 GB limits), else bytes.
func sizeText(n int64) string {
	if n >= 1<<30-64 && n <= 1<<30 {
		return "1 GB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

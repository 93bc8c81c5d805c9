package hnsw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"unsafe"
)

// The stored form of an index, all integers little-endian:
//
//	header (76 bytes)
//	  magic      "DLHNSW\r\n"
//	  version    u32 (1)
//	  dim, m, ef_construction, metric   u32 each
//	  seed       u64
//	  nodes      u64
//	  deleted    u64   tombstoned nodes
//	  entry      i64   entry point node, -1 when empty
//	  top        u32   entry point's level
//	  upper      u64   words of upper-layer lists
//	  crc        u32   CRC-32C of the header's first 72 bytes
//	body
//	  ids        nodes × u64
//	  levels     nodes × u8
//	  states     nodes × u8    1 = tombstone
//	  vectors    nodes × dim × f32 (normalized under Cosine)
//	  layer 0    nodes × (1 + 2m) × u32   count, then slots
//	  upper      upper × u32   per node of level L > 0, in node order:
//	                           its lists of layers 1..L, each count + m slots
//	  crc        u32   CRC-32C of the body
//
// The header has its own checksum so that sizes are trusted before anything
// is allocated for them. Read then checks the body's checksum and every
// structural invariant (see check) before returning an index.
const (
	magic         = "DLHNSW\r\n"
	formatVersion = 1
	headerSize    = 76
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var _ io.WriterTo = (*Index)(nil)

// WriteTo writes the index in its stored form. Add and Delete wait while it
// runs; searches do not.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	x.mutMu.Lock()
	defer x.mutMu.Unlock()
	x.growMu.RLock()
	defer x.growMu.RUnlock()
	x.epMu.RLock()
	entry, top := x.entry, x.top
	x.epMu.RUnlock()

	n := int(x.n.Load())
	ew := &encoder{w: w, crc: crc32.New(castagnoli), buf: make([]byte, 0, 64<<10)}
	h := make([]byte, 0, headerSize)
	h = append(h, magic...)
	h = binary.LittleEndian.AppendUint32(h, formatVersion)
	h = binary.LittleEndian.AppendUint32(h, uint32(x.cfg.Dim))
	h = binary.LittleEndian.AppendUint32(h, uint32(x.cfg.M))
	h = binary.LittleEndian.AppendUint32(h, uint32(x.cfg.EfConstruction))
	h = binary.LittleEndian.AppendUint32(h, uint32(x.cfg.Metric))
	h = binary.LittleEndian.AppendUint64(h, x.cfg.Seed)
	h = binary.LittleEndian.AppendUint64(h, uint64(n))
	h = binary.LittleEndian.AppendUint64(h, uint64(x.nDeleted.Load()))
	h = binary.LittleEndian.AppendUint64(h, uint64(int64(entry)))
	h = binary.LittleEndian.AppendUint32(h, uint32(top))
	h = binary.LittleEndian.AppendUint64(h, uint64(x.upperUsed))
	h = binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	ew.raw(h)

	for _, id := range x.ids[:n] {
		ew.u64(id)
	}
	ew.bytes(x.levels[:n])
	for i := range n {
		var b byte
		if x.state[i]&stateDeleted != 0 {
			b = 1
		}
		ew.byte(b)
	}
	for _, f := range x.vecs[:n*x.cfg.Dim] {
		ew.u32(math.Float32bits(f))
	}
	for _, v := range x.links0[:n*(x.m0+1)] {
		ew.u32(v)
	}
	for i := range n {
		if lv := int(x.levels[i]); lv > 0 {
			off := int(x.upperOff[i])
			for _, v := range x.upper[off : off+lv*(x.cfg.M+1)] {
				ew.u32(v)
			}
		}
	}
	ew.flush()
	ew.raw(binary.LittleEndian.AppendUint32(nil, ew.crc.Sum32()))
	return ew.n, ew.err
}

// encoder buffers writes and checksums what passes through ew.bytes.
type encoder struct {
	w   io.Writer
	crc hash.Hash32
	buf []byte
	n   int64
	err error
}

func (e *encoder) raw(b []byte) {
	if e.err != nil {
		return
	}
	k, err := e.w.Write(b)
	e.n += int64(k)
	e.err = err
}

func (e *encoder) flush() {
	e.crc.Write(e.buf)
	e.raw(e.buf)
	e.buf = e.buf[:0]
}

func (e *encoder) bytes(b []byte) {
	for len(b) > 0 {
		if len(e.buf) == cap(e.buf) {
			e.flush()
		}
		k := min(len(b), cap(e.buf)-len(e.buf))
		e.buf = append(e.buf, b[:k]...)
		b = b[k:]
	}
}

func (e *encoder) byte(b byte) {
	if len(e.buf) == cap(e.buf) {
		e.flush()
	}
	e.buf = append(e.buf, b)
}

func (e *encoder) u32(v uint32) {
	if cap(e.buf)-len(e.buf) < 4 {
		e.flush()
	}
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
}

func (e *encoder) u64(v uint64) {
	if cap(e.buf)-len(e.buf) < 8 {
		e.flush()
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
}

// Read loads an index written by WriteTo. It reads exactly the stored bytes
// from r and no further. Malformed input (a bad checksum, a truncated
// stream, sizes or links that do not fit together) returns an error wrapping
// ErrCorrupt; errors of r itself are returned wrapped as they are.
func Read(r io.Reader) (*Index, error) {
	d := &decoder{r: r, crc: crc32.New(castagnoli)}
	h := make([]byte, headerSize)
	if err := d.full(h); err != nil {
		return nil, err
	}
	if string(h[:8]) != magic {
		return nil, fmt.Errorf("%w: not an hnsw index", ErrCorrupt)
	}
	le := binary.LittleEndian
	if got, want := le.Uint32(h[72:]), crc32.Checksum(h[:72], castagnoli); got != want {
		return nil, fmt.Errorf("%w: header checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := le.Uint32(h[8:]); v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, v, formatVersion)
	}
	u32 := func(off int) int { return int(le.Uint32(h[off:])) }
	cfg := Config{Dim: u32(12), M: u32(16), EfConstruction: u32(20), Metric: Metric(min(u32(24), 255)), Seed: le.Uint64(h[28:])}
	if cfg.M == 0 || cfg.EfConstruction == 0 || u32(24) > 255 {
		return nil, fmt.Errorf("%w: bad configuration", ErrCorrupt)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	nodes, deleted, entry := le.Uint64(h[36:]), le.Uint64(h[44:]), int64(le.Uint64(h[52:]))
	top, upperWords := le.Uint32(h[60:]), le.Uint64(h[64:])
	switch {
	case nodes >= math.MaxUint32:
		return nil, fmt.Errorf("%w: %d nodes", ErrCorrupt, nodes)
	case deleted > nodes:
		return nil, fmt.Errorf("%w: %d tombstones of %d nodes", ErrCorrupt, deleted, nodes)
	case entry < -1 || entry >= int64(nodes) || (entry == -1) != (nodes == 0):
		return nil, fmt.Errorf("%w: entry point %d of %d nodes", ErrCorrupt, entry, nodes)
	case top > maxLevel || upperWords > nodes*maxLevel*uint64(cfg.M+1):
		return nil, fmt.Errorf("%w: top level %d, %d upper words", ErrCorrupt, top, upperWords)
	}
	n := int(nodes)
	x := newIndex(cfg)

	ids, err := readSlice[uint64](d, n)
	if err != nil {
		return nil, err
	}
	levels, err := readSlice[uint8](d, n)
	if err != nil {
		return nil, err
	}
	stateBytes, err := readSlice[uint8](d, n)
	if err != nil {
		return nil, err
	}
	vecs, err := readSlice[float32](d, n*cfg.Dim)
	if err != nil {
		return nil, err
	}
	links0, err := readSlice[uint32](d, n*(x.m0+1))
	if err != nil {
		return nil, err
	}
	upperOff := make([]uint32, n)
	used := uint64(0)
	for i, lv := range levels {
		upperOff[i] = uint32(used)
		used += uint64(lv) * uint64(cfg.M+1)
		if used > upperWords {
			break
		}
	}
	if used != upperWords {
		return nil, fmt.Errorf("%w: levels need %d upper words, header says %d", ErrCorrupt, used, upperWords)
	}
	upper, err := readSlice[uint32](d, int(upperWords))
	if err != nil {
		return nil, err
	}
	sum := d.crc.Sum32()
	tail := make([]byte, 4)
	if err := d.full(tail); err != nil {
		return nil, err
	}
	if got := le.Uint32(tail); got != sum {
		return nil, fmt.Errorf("%w: body checksum %08x, want %08x", ErrCorrupt, got, sum)
	}

	states := make([]uint32, n)
	x.capNodes = n
	x.ids, x.levels, x.state, x.vecs = ids, levels, states, vecs
	x.links0, x.upperOff, x.upper = links0, upperOff, upper
	x.upperUsed = int(upperWords)
	x.n.Store(uint32(n))
	x.nDeleted.Store(int64(deleted))
	x.entry, x.top = int32(entry), int(top)
	for i, b := range stateBytes {
		switch b {
		case 0:
			states[i] = stateReady
		case 1:
			states[i] = stateReady | stateDeleted
			continue
		default:
			return nil, fmt.Errorf("%w: node %d has state %d", ErrCorrupt, i, b)
		}
		if _, dup := x.byID[ids[i]]; dup {
			return nil, fmt.Errorf("%w: id %d on two live nodes", ErrCorrupt, ids[i])
		}
		x.byID[ids[i]] = uint32(i)
	}
	for i := range n {
		v := x.vec(uint32(i))
		if !finite(v) {
			return nil, fmt.Errorf("%w: node %d holds NaN or infinity", ErrCorrupt, i)
		}
		if cfg.Metric == InnerProduct {
			x.noteNorm(v)
		}
		if cfg.Metric == Cosine {
			if s := dotKernel(v, v); s < 0.999 || s > 1.001 {
				return nil, fmt.Errorf("%w: node %d is not normalized", ErrCorrupt, i)
			}
		}
	}
	if err := x.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return x, nil
}

// decoder reads exact byte counts, checksumming everything after the header.
type decoder struct {
	r   io.Reader
	crc hash.Hash32
	buf []byte
}

// full fills b, turning a short stream into ErrCorrupt.
func (d *decoder) full(b []byte) error {
	if _, err := io.ReadFull(d.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: truncated", ErrCorrupt)
		}
		return err
	}
	return nil
}

// readSlice reads count little-endian elements of T (uint8, uint32, uint64
// or float32). It grows the slice as bytes arrive, so a header that claims
// more than the stream holds fails at the end of the stream instead of
// allocating the claimed size up front.
func readSlice[T uint8 | uint32 | uint64 | float32](d *decoder, count int) ([]T, error) {
	const chunk = 256 << 10
	if d.buf == nil {
		d.buf = make([]byte, chunk)
	}
	size := int(unsafe.Sizeof(T(0)))
	out := make([]T, 0, min(count, 4<<20)) // then doubling as bytes arrive
	per := chunk / size
	le := binary.LittleEndian
	for len(out) < count {
		k := min(per, count-len(out))
		b := d.buf[:k*size]
		if err := d.full(b); err != nil {
			return nil, err
		}
		d.crc.Write(b)
		at := len(out)
		out = slices.Grow(out, k)[:at+k]
		switch dst := any(out[at:]).(type) {
		case []uint8:
			copy(dst, b)
		case []uint32:
			for i := range dst {
				dst[i] = le.Uint32(b[4*i:])
			}
		case []uint64:
			for i := range dst {
				dst[i] = le.Uint64(b[8*i:])
			}
		case []float32:
			for i := range dst {
				dst[i] = math.Float32frombits(le.Uint32(b[4*i:]))
			}
		}
	}
	return out, nil
}

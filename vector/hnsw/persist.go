package hnsw

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/deeplaked/deeplaked/vector/internal/binio"
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
	ew := binio.NewEncoder(w)
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
	ew.Raw(h)

	for _, id := range x.ids[:n] {
		ew.U64(id)
	}
	ew.Bytes(x.levels[:n])
	for i := range n {
		var b byte
		if x.state[i]&stateDeleted != 0 {
			b = 1
		}
		ew.Byte(b)
	}
	for _, f := range x.vecs[:n*x.cfg.Dim] {
		ew.U32(math.Float32bits(f))
	}
	for _, v := range x.links0[:n*(x.m0+1)] {
		ew.U32(v)
	}
	for i := range n {
		if lv := int(x.levels[i]); lv > 0 {
			off := int(x.upperOff[i])
			for _, v := range x.upper[off : off+lv*(x.cfg.M+1)] {
				ew.U32(v)
			}
		}
	}
	ew.Flush()
	ew.Raw(binary.LittleEndian.AppendUint32(nil, ew.Sum32()))
	return ew.Result()
}

// Read loads an index written by WriteTo. It reads exactly the stored bytes
// from r and no further. Malformed input (a bad checksum, a truncated
// stream, sizes or links that do not fit together) returns an error wrapping
// ErrCorrupt; errors of r itself are returned wrapped as they are.
func Read(r io.Reader) (*Index, error) {
	d := binio.NewDecoder(r, ErrCorrupt)
	h := make([]byte, headerSize)
	if err := d.Full(h); err != nil {
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

	ids, err := binio.ReadSlice[uint64](d, n)
	if err != nil {
		return nil, err
	}
	levels, err := binio.ReadSlice[uint8](d, n)
	if err != nil {
		return nil, err
	}
	stateBytes, err := binio.ReadSlice[uint8](d, n)
	if err != nil {
		return nil, err
	}
	vecs, err := binio.ReadSlice[float32](d, n*cfg.Dim)
	if err != nil {
		return nil, err
	}
	links0, err := binio.ReadSlice[uint32](d, n*(x.m0+1))
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
	upper, err := binio.ReadSlice[uint32](d, int(upperWords))
	if err != nil {
		return nil, err
	}
	sum := d.Sum32()
	tail := make([]byte, 4)
	if err := d.Full(tail); err != nil {
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

package ivf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/deeplaked/deeplaked/vector/internal/binio"
)

// The stored form of an index, all integers little-endian:
//
//	header (56 bytes)
//	  magic      "DLIVFFL\n"
//	  version    u32 (1)
//	  dim, lists, metric   u32 each   (lists as configured)
//	  seed       u64
//	  centroids  u32   lists in use, 0 when untrained
//	  rows       u64   rows in all lists, tombstones included
//	  deleted    u64   tombstones
//	  crc        u32   CRC-32C of the header's first 52 bytes
//	body
//	  centroids  centroids × dim × f32 (unit vectors unless L2)
//	  counts     centroids × u64   rows per list
//	  per list, in order:
//	    ids      count × u64
//	    states   count × u8    1 = tombstone
//	    vectors  count × dim × f32 (unit vectors under Cosine)
//	  crc        u32   CRC-32C of the body
//
// The header has its own checksum so that sizes are trusted before anything
// is allocated for them. Read then checks the body's checksum and every
// invariant (counts add up, finite and unit vectors where required, no two
// live rows with one id) before returning an index.
const (
	magic         = "DLIVFFL\n"
	formatVersion = 1
	headerSize    = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var _ io.WriterTo = (*Index)(nil)

// WriteTo writes the index in its stored form. Add, AddBatch and Delete
// wait while it runs; searches do not.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	x.idMu.Lock()
	defer x.idMu.Unlock()

	d := x.cfg.Dim
	var rows uint64
	for _, l := range x.lists {
		rows += uint64(len(l.ids)) // stable: mutations hold idMu
	}
	le := binary.LittleEndian
	h := make([]byte, 0, headerSize)
	h = append(h, magic...)
	h = le.AppendUint32(h, formatVersion)
	h = le.AppendUint32(h, uint32(d))
	h = le.AppendUint32(h, uint32(x.cfg.Lists))
	h = le.AppendUint32(h, uint32(x.cfg.Metric))
	h = le.AppendUint64(h, x.cfg.Seed)
	h = le.AppendUint32(h, uint32(len(x.lists)))
	h = le.AppendUint64(h, rows)
	h = le.AppendUint64(h, uint64(x.nDeleted.Load()))
	h = le.AppendUint32(h, crc32.Checksum(h, castagnoli))

	e := binio.NewEncoder(w)
	e.Raw(h)
	for _, f := range x.centroids {
		e.U32(math.Float32bits(f))
	}
	for _, l := range x.lists {
		e.U64(uint64(len(l.ids)))
	}
	for _, l := range x.lists {
		l.mu.RLock()
		for _, id := range l.ids {
			e.U64(id)
		}
		for _, dead := range l.dead {
			var b byte
			if dead {
				b = 1
			}
			e.Byte(b)
		}
		for _, f := range l.vecs {
			e.U32(math.Float32bits(f))
		}
		l.mu.RUnlock()
	}
	e.Flush()
	e.Raw(le.AppendUint32(nil, e.Sum32()))
	return e.Result()
}

// Read loads an index written by WriteTo. It reads exactly the stored bytes
// from r and no further. Malformed input (a bad checksum, a truncated
// stream, sizes that do not add up, invalid vectors) returns an error
// wrapping ErrCorrupt; errors of r itself are returned wrapped as they are.
func Read(r io.Reader) (*Index, error) {
	dec := binio.NewDecoder(r, ErrCorrupt)
	h := make([]byte, headerSize)
	if err := dec.Full(h); err != nil {
		return nil, err
	}
	if string(h[:8]) != magic {
		return nil, fmt.Errorf("%w: not an ivfflat index", ErrCorrupt)
	}
	le := binary.LittleEndian
	if got, want := le.Uint32(h[52:]), crc32.Checksum(h[:52], castagnoli); got != want {
		return nil, fmt.Errorf("%w: header checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := le.Uint32(h[8:]); v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, v, formatVersion)
	}
	u32 := func(off int) int { return int(le.Uint32(h[off:])) }
	if u32(16) == 0 || u32(20) > 255 {
		return nil, fmt.Errorf("%w: bad configuration", ErrCorrupt)
	}
	cfg, err := Config{Dim: u32(12), Lists: u32(16), Metric: Metric(u32(20)), Seed: le.Uint64(h[24:])}.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	nc, rows, deleted := u32(32), le.Uint64(h[36:]), le.Uint64(h[44:])
	switch {
	case nc > cfg.Lists:
		return nil, fmt.Errorf("%w: %d centroids for %d lists", ErrCorrupt, nc, cfg.Lists)
	case rows > math.MaxUint32*uint64(max(nc, 1)) || nc == 0 && rows > 0:
		return nil, fmt.Errorf("%w: %d rows in %d lists", ErrCorrupt, rows, nc)
	case deleted > rows:
		return nil, fmt.Errorf("%w: %d tombstones of %d rows", ErrCorrupt, deleted, rows)
	}
	d := cfg.Dim
	x := newIndex(cfg)
	centroids, err := binio.ReadSlice[float32](dec, nc*d)
	if err != nil {
		return nil, err
	}
	counts, err := binio.ReadSlice[uint64](dec, nc)
	if err != nil {
		return nil, err
	}
	var sum uint64
	for _, c := range counts {
		if c > math.MaxUint32 || sum+c > rows {
			return nil, fmt.Errorf("%w: list sizes exceed %d rows", ErrCorrupt, rows)
		}
		sum += c
	}
	if sum != rows {
		return nil, fmt.Errorf("%w: list sizes add up to %d rows, header says %d", ErrCorrupt, sum, rows)
	}
	lists := make([]*list, nc)
	for i, c := range counts {
		l := &list{}
		if l.ids, err = binio.ReadSlice[uint64](dec, int(c)); err != nil {
			return nil, err
		}
		states, err := binio.ReadSlice[uint8](dec, int(c))
		if err != nil {
			return nil, err
		}
		if l.vecs, err = binio.ReadSlice[float32](dec, int(c)*d); err != nil {
			return nil, err
		}
		l.dead = make([]bool, c)
		for j, b := range states {
			switch b {
			case 0:
			case 1:
				l.dead[j] = true
				l.ndead++
			default:
				return nil, fmt.Errorf("%w: row %d of list %d has state %d", ErrCorrupt, j, i, b)
			}
		}
		lists[i] = l
	}
	sumCRC := dec.Sum32()
	tail := make([]byte, 4)
	if err := dec.Full(tail); err != nil {
		return nil, err
	}
	if got := le.Uint32(tail); got != sumCRC {
		return nil, fmt.Errorf("%w: body checksum %08x, want %08x", ErrCorrupt, got, sumCRC)
	}

	for c := range nc {
		if err := checkVector(cfg.Metric != L2, centroids[c*d:(c+1)*d]); err != nil {
			return nil, fmt.Errorf("%w: centroid %d %v", ErrCorrupt, c, err)
		}
	}
	var dead uint64
	for c, l := range lists {
		dead += uint64(l.ndead)
		for j, id := range l.ids {
			if err := checkVector(cfg.Metric == Cosine, l.vecs[j*d:(j+1)*d]); err != nil {
				return nil, fmt.Errorf("%w: row %d of list %d %v", ErrCorrupt, j, c, err)
			}
			if l.dead[j] {
				continue
			}
			if _, dup := x.byID[id]; dup {
				return nil, fmt.Errorf("%w: id %d on two live rows", ErrCorrupt, id)
			}
			x.byID[id] = loc{uint32(c), uint32(j)}
		}
	}
	if dead != deleted {
		return nil, fmt.Errorf("%w: %d tombstones, header says %d", ErrCorrupt, dead, deleted)
	}
	x.nDeleted.Store(int64(deleted))
	if nc > 0 {
		x.centroids, x.lists = centroids, lists
	}
	return x, nil
}

// checkVector reports a vector that holds NaN or infinity, or that is not a
// unit vector when unit is set.
func checkVector(unit bool, v []float32) error {
	if !finite(v) {
		return errors.New("holds NaN or infinity")
	}
	if unit {
		if s := sqNorm64(v); s < 0.999 || s > 1.001 {
			return errors.New("is not a unit vector")
		}
	}
	return nil
}

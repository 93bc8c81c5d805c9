// Package binio is the checksummed little-endian stream the vector indexes
// (vector/hnsw, vector/ivf) store themselves in: an Encoder that buffers
// and checksums what it writes, and a Decoder that reads exact counts and
// checksums them, growing slices only as bytes arrive.
package binio

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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encoder buffers writes to w; what goes through Bytes, Byte, U32 and U64
// is checksummed (CRC-32C), what goes through Raw is not.
type Encoder struct {
	w   io.Writer
	crc hash.Hash32
	buf []byte
	n   int64
	err error
}

// NewEncoder returns an Encoder writing to w through a 64 KiB buffer.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w, crc: crc32.New(castagnoli), buf: make([]byte, 0, 64<<10)}
}

// Raw writes b unbuffered and unchecksummed (after Flush, to keep order).
func (e *Encoder) Raw(b []byte) {
	if e.err != nil {
		return
	}
	k, err := e.w.Write(b)
	e.n += int64(k)
	e.err = err
}

// Flush checksums and writes what is buffered.
func (e *Encoder) Flush() {
	e.crc.Write(e.buf)
	e.Raw(e.buf)
	e.buf = e.buf[:0]
}

func (e *Encoder) Bytes(b []byte) {
	for len(b) > 0 {
		if len(e.buf) == cap(e.buf) {
			e.Flush()
		}
		k := min(len(b), cap(e.buf)-len(e.buf))
		e.buf = append(e.buf, b[:k]...)
		b = b[k:]
	}
}

func (e *Encoder) Byte(b byte) {
	if len(e.buf) == cap(e.buf) {
		e.Flush()
	}
	e.buf = append(e.buf, b)
}

func (e *Encoder) U32(v uint32) {
	if cap(e.buf)-len(e.buf) < 4 {
		e.Flush()
	}
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
}

func (e *Encoder) U64(v uint64) {
	if cap(e.buf)-len(e.buf) < 8 {
		e.Flush()
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
}

// Sum32 is the checksum of what was flushed so far.
func (e *Encoder) Sum32() uint32 { return e.crc.Sum32() }

// Result returns the bytes written and the first write error.
func (e *Encoder) Result() (int64, error) { return e.n, e.err }

// Decoder reads exact byte counts from r; ReadSlice checksums what it reads.
type Decoder struct {
	r       io.Reader
	crc     hash.Hash32
	buf     []byte
	corrupt error
}

// NewDecoder returns a Decoder whose short reads wrap corrupt.
func NewDecoder(r io.Reader, corrupt error) *Decoder {
	return &Decoder{r: r, crc: crc32.New(castagnoli), corrupt: corrupt}
}

// Full fills b, unchecksummed, turning a short stream into the corrupt
// error.
func (d *Decoder) Full(b []byte) error {
	if _, err := io.ReadFull(d.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: truncated", d.corrupt)
		}
		return err
	}
	return nil
}

// Sum32 is the checksum of what ReadSlice read so far.
func (d *Decoder) Sum32() uint32 { return d.crc.Sum32() }

// ReadSlice reads count little-endian elements of T. It grows the slice as
// bytes arrive, so a header that claims more than the stream holds fails
// at the end of the stream instead of allocating the claimed size up front.
func ReadSlice[T uint8 | uint32 | uint64 | float32](d *Decoder, count int) ([]T, error) {
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
		if err := d.Full(b); err != nil {
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

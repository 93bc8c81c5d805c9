package exec

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// spillFile holds rows written to a temporary file (a partition of a hash
// aggregate's or a hash join's input past work_mem), to be read back once
// as batches. Each row is its length, a uvarint, then types.AppendRow's
// encoding.
type spillFile struct {
	f    *os.File
	w    *bufio.Writer
	rows int64
	size int64
	row  []byte
	// what names the operator in errors: "hash aggregate".
	what string
}

// spillWriteBuffer is the write buffer of each partition file.
const spillWriteBuffer = 64 << 10

func newSpillFile(mk func() (*os.File, error), what string) (*spillFile, error) {
	f, err := mk()
	if err != nil {
		return nil, pgerror.Newf(pgerror.IOError, "could not create a temporary file for the %s: %v", what, err)
	}
	return &spillFile{f: f, w: bufio.NewWriterSize(f, spillWriteBuffer), what: what}, nil
}

// write appends row i of b.
func (s *spillFile) write(b *types.Batch, i int) error {
	var head [binary.MaxVarintLen64]byte
	s.row = types.AppendRow(s.row[:0], b, i)
	n := binary.PutUvarint(head[:], uint64(len(s.row)))
	if _, err := s.w.Write(head[:n]); err != nil {
		return s.writeError(err)
	}
	if _, err := s.w.Write(s.row); err != nil {
		return s.writeError(err)
	}
	s.rows++
	s.size += int64(n + len(s.row))
	return nil
}

func (s *spillFile) writeError(err error) error {
	return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the %s: %v", s.what, err)
}

// reader flushes the file and returns an operator reading its rows back
// as batches of columns ts; closing it closes the file.
func (s *spillFile) reader(ts []types.Type) (*spillReader, error) {
	if err := s.w.Flush(); err != nil {
		return nil, s.writeError(err)
	}
	s.w = nil
	r := &spillReader{f: s, r: bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), 256<<10),
		dec: types.NewRowDecoder(ts), out: types.NewBatch(ts, types.BatchSize)}
	r.dec.Bind(nil, r.out)
	return r, nil
}

func (s *spillFile) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// spillReader reads a spillFile's rows back, a batch at a time.
type spillReader struct {
	f   *spillFile
	r   *bufio.Reader
	dec *types.RowDecoder
	out *types.Batch
	buf []byte
}

var _ Operator = (*spillReader)(nil)

func (r *spillReader) Next() (*types.Batch, error) {
	r.out.Reset()
	n := 0
	for ; n < types.BatchSize; n++ {
		size, err := binary.ReadUvarint(r.r)
		if err == io.EOF {
			break
		}
		if err == nil {
			if uint64(cap(r.buf)) < size {
				r.buf = make([]byte, size)
			}
			r.buf = r.buf[:size]
			if _, err = io.ReadFull(r.r, r.buf); err == nil {
				err = r.dec.Decode(r.buf)
			}
		}
		if err != nil {
			return nil, pgerror.Newf(pgerror.IOError, "could not read a temporary file of the %s: %v", r.f.what, err)
		}
	}
	if n == 0 {
		return nil, nil
	}
	r.out.SetLen(n)
	return r.out, nil
}

func (r *spillReader) Close() { r.f.close() }

// spillFanout is the number of partitions an operator splits its rows
// into when they outgrow work_mem; a partition still too large is split
// again.
const spillFanout = 32

// spillPartition picks the partition of a row whose key hashes to h at
// the given depth of partitioning: each depth mixes the hash differently,
// so that a partition split again spreads over all of the next.
func spillPartition(h uint64, depth int) int {
	h ^= uint64(depth+1) * 0x9e3779b97f4a7c15
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return int(h % spillFanout)
}

// maxSpillDepth bounds how many times a partition is split again: keys
// that do not spread by then are the same key, and splitting cannot help.
const maxSpillDepth = 8

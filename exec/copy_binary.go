package exec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// copySignature starts every binary COPY stream.
const copySignature = "PGCOPY\n\xff\r\n\x00"

// binaryReader reads rows in PostgreSQL's binary COPY format: the
// signature, flags and header extension, then per tuple an int16 field
// count (-1 ends the data) and per field an int32 length (-1 is NULL) and
// the value in its type's binary send form, big-endian.
type binaryReader struct {
	cf *copyFrom
	br *bufio.Reader
	// field holds the current field's bytes.
	field []byte
	// codec decodes the fields.
	codec types.BinaryCodec
	// num receives integers read from the stream (a field of the reader,
	// so reading one does not allocate).
	num [4]byte
}

func copyFormatError(msg string) error { return pgerror.New(pgerror.BadCopyFileFormat, msg) }

var errUnexpectedEOF = copyFormatError("unexpected EOF in COPY data")

// readHeader checks the signature and flags and skips the extension.
func (d *binaryReader) readHeader() error {
	var sig [len(copySignature)]byte
	if _, err := io.ReadFull(d.br, sig[:]); err != nil || string(sig[:]) != copySignature {
		return streamError(err, copyFormatError("COPY file signature not recognized"))
	}
	flags, err := d.int32()
	if err != nil {
		return streamError(err, copyFormatError("invalid COPY file header (missing flags)"))
	}
	if flags&(1<<16) != 0 {
		return copyFormatError("invalid COPY file header (WITH OIDS)")
	}
	if flags>>17 != 0 {
		return copyFormatError("unrecognized critical flags in COPY file header")
	}
	ext, err := d.int32()
	if err != nil || ext < 0 {
		return streamError(err, copyFormatError("invalid COPY file header (missing length)"))
	}
	if _, err := d.br.Discard(int(ext)); err != nil {
		return streamError(err, copyFormatError("invalid COPY file header (wrong length)"))
	}
	return nil
}

// streamError returns err when the stream itself failed (the client's
// CopyFail, a lost connection), and short when the data simply ended.
func streamError(err, short error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return short
	}
	return err
}

func (d *binaryReader) int32() (int32, error) {
	_, err := io.ReadFull(d.br, d.num[:4])
	return int32(binary.BigEndian.Uint32(d.num[:4])), err
}

// readRow reads one tuple into the target columns.
func (d *binaryReader) readRow() (bool, error) {
	cf := d.cf
	cf.line++
	b := d.num[:2]
	if n, err := io.ReadFull(d.br, b); err != nil {
		if n == 0 && err == io.EOF {
			return false, nil // the end of the stream without a trailer is accepted, as in PostgreSQL
		}
		return false, cf.lineError(streamError(err, errUnexpectedEOF), nil)
	}
	count := int16(binary.BigEndian.Uint16(b))
	if count == -1 {
		// The trailer; the stream must end here.
		if _, err := d.br.ReadByte(); err != io.EOF {
			return false, cf.lineError(streamError(err, copyFormatError("received copy data after EOF marker")), nil)
		}
		return false, nil
	}
	if int(count) != len(cf.target) {
		return false, cf.lineError(pgerror.Newf(pgerror.BadCopyFileFormat, "row field count is %d, expected %d", count, len(cf.target)), nil)
	}
	for i, v := range cf.target {
		size, err := d.int32()
		if err != nil {
			return false, cf.columnError(streamError(err, errUnexpectedEOF), i, nil)
		}
		if size == -1 {
			v.AppendNull()
			continue
		}
		if size < -1 {
			return false, cf.columnError(copyFormatError("invalid field size"), i, nil)
		}
		if err := d.readField(int(size)); err != nil {
			return false, cf.columnError(err, i, nil)
		}
		cf.inBytes += 4 + len(d.field)
		if err := d.codec.AppendRecv(v, d.field); err != nil {
			return false, cf.columnError(err, i, nil)
		}
	}
	cf.inBytes += 2
	return true, nil
}

// readField reads size bytes into d.field, growing it only as the data
// arrives, so a bogus length costs no memory.
func (d *binaryReader) readField(size int) error {
	if size > maxCopyRow {
		return rowTooLong()
	}
	d.field = d.field[:0]
	for len(d.field) < size {
		n := min(size-len(d.field), copyReadBuffer)
		start := len(d.field)
		d.field = slices.Grow(d.field, n)[:start+n]
		if _, err := io.ReadFull(d.br, d.field[start:]); err != nil {
			return streamError(err, errUnexpectedEOF)
		}
	}
	return nil
}

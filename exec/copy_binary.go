package exec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
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
	// field holds the current field's bytes; elems is scratch for
	// decoded values.
	field, elems []byte
	dims         []int
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
		if err := d.appendValue(v, d.field); err != nil {
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

// Errors of a value whose length does not fit its type, as PostgreSQL's
// receive functions report them.
var (
	errShortValue = pgerror.New(pgerror.ProtocolViolation, "insufficient data left in message")
	errLongValue  = pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format")
)

// fixedSize checks that a value of a fixed-size type has n bytes.
func fixedSize(b []byte, n int) error {
	switch {
	case len(b) < n:
		return errShortValue
	case len(b) > n:
		return errLongValue
	}
	return nil
}

// appendValue decodes the binary send form of one value into v.
func (d *binaryReader) appendValue(v *types.Vec, b []byte) error {
	switch v.Type.Kind {
	case types.Bool:
		if err := fixedSize(b, 1); err != nil {
			return err
		}
		v.AppendBool(b[0] != 0)
	case types.Int2:
		if err := fixedSize(b, 2); err != nil {
			return err
		}
		v.AppendInt(int64(int16(binary.BigEndian.Uint16(b))))
	case types.Int4:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		v.AppendInt(int64(int32(binary.BigEndian.Uint32(b))))
	case types.Int8:
		if err := fixedSize(b, 8); err != nil {
			return err
		}
		v.AppendInt(int64(binary.BigEndian.Uint64(b)))
	case types.Float4:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		v.AppendFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
	case types.Float8:
		if err := fixedSize(b, 8); err != nil {
			return err
		}
		v.AppendFloat(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case types.Bytea:
		v.AppendBytes(b)
	case types.JSONB:
		if len(b) == 0 {
			return errShortValue
		}
		if b[0] != 1 {
			return pgerror.Newf(pgerror.InvalidBinaryRepresentation, "unsupported jsonb version number %d", b[0])
		}
		return d.cf.appendText(v, b[1:])
	case types.Vector:
		return d.appendVector(v, b)
	case types.Tensor:
		return d.appendTensor(v, b)
	default:
		// text, varchar and json send their text.
		return d.cf.appendText(v, b)
	}
	return nil
}

// appendVector decodes pgvector's binary form: int16 dim, int16 unused
// (0), dim float4.
func (d *binaryReader) appendVector(v *types.Vec, b []byte) error {
	if len(b) < 4 {
		return errShortValue
	}
	dim := int(int16(binary.BigEndian.Uint16(b)))
	unused := int16(binary.BigEndian.Uint16(b[2:]))
	switch {
	case dim < 1:
		return pgerror.New(pgerror.DataException, "vector must have at least 1 dimension")
	case dim > types.MaxVectorDims:
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "vector cannot have more than %d dimensions", types.MaxVectorDims)
	case v.Type.Width > 0 && dim != v.Type.Width:
		return pgerror.Newf(pgerror.DataException, "expected %d dimensions, not %d", v.Type.Width, dim)
	case unused != 0:
		return pgerror.Newf(pgerror.InvalidParameterValue, "expected unused to be 0, not %d", unused)
	}
	if err := fixedSize(b[4:], 4*dim); err != nil {
		return err
	}
	d.elems = d.elems[:0]
	for i := 0; i < dim; i++ {
		bits := binary.BigEndian.Uint32(b[4+4*i:])
		f := math.Float32frombits(bits)
		if math.IsNaN(float64(f)) {
			return pgerror.New(pgerror.DataException, "NaN not allowed in vector")
		}
		if math.IsInf(float64(f), 0) {
			return pgerror.New(pgerror.DataException, "infinite value not allowed in vector")
		}
		d.elems = binary.LittleEndian.AppendUint32(d.elems, bits)
	}
	v.AppendBytes(d.elems)
	return nil
}

package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Tensor and vector values are held in Vec.Bytes:
//
//   - vector(n): n float32, little-endian.
//   - a fixed-shape tensor (no Ragged dimension): its elements in row-major
//     (C) order, little-endian, DType.Size() bytes each; bool is one 0/1
//     byte, float16 is IEEE half, bfloat16 the upper 16 bits of a float32.
//   - a ragged tensor (some dimension Ragged): a header of len(Shape)
//     uint32 little-endian actual dimensions, then the elements as above.
//
// A vector(n) and a float32[n] value have identical bytes, so a cast between
// them is a relabel plus a dimension check.

// MaxVectorDims is pgvector's limit on vector dimensions.
const MaxVectorDims = 16000

// maxTensorElems bounds how many elements one text literal may produce.
const maxTensorElems = 1 << 28

// TensorDims returns the actual dimensions of the tensor value val of type
// t, appended to dst[:0], and the element bytes that follow any header. For
// a value too short to hold its header the dims are zero and data is nil.
func TensorDims(t Type, val []byte, dst []int) (dims []int, data []byte) {
	dims = dst[:0]
	if !t.Ragged() {
		return append(dims, t.Shape...), val
	}
	h := 4 * len(t.Shape)
	if len(val) < h {
		for range t.Shape {
			dims = append(dims, 0)
		}
		return dims, nil
	}
	for k := range t.Shape {
		dims = append(dims, int(binary.LittleEndian.Uint32(val[4*k:])))
	}
	return dims, val[h:]
}

// Cardinality returns the total number of elements of the tensor value val
// (PostgreSQL's cardinality()).
func Cardinality(t Type, val []byte) int {
	if !t.Ragged() {
		return t.FixedElems()
	}
	var buf [8]int
	_, data := TensorDims(t, val, buf[:0])
	if sz := t.DType.Size(); sz > 0 {
		return len(data) / sz
	}
	return 0
}

// ArrayLength returns the length of dimension dim (1-based) of the tensor
// value val, as PostgreSQL's array_length(). ok is false (SQL NULL) for a
// dimension that does not exist or an empty tensor.
func ArrayLength(t Type, val []byte, dim int) (n int, ok bool) {
	if dim < 1 || dim > len(t.Shape) {
		return 0, false
	}
	var buf [8]int
	dims, _ := TensorDims(t, val, buf[:0])
	for _, d := range dims {
		if d == 0 {
			return 0, false
		}
	}
	return dims[dim-1], true
}

// SubscriptType returns the type of a tensor of type t subscripted with
// nsubs indexes: the element's SQL type (DType.SQLType) for a full set, a
// tensor of the remaining dimensions (ragged ones kept ragged) for fewer.
// More subscripts than dimensions are a 2202E error.
func SubscriptType(t Type, nsubs int) (Type, error) {
	if t.Kind != Tensor {
		return Type{}, pgerror.Newf(pgerror.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", t)
	}
	switch {
	case nsubs > len(t.Shape):
		return Type{}, pgerror.Newf(pgerror.ArraySubscriptError,
			"wrong number of array subscripts: %s has %d dimensions, got %d subscripts", t, len(t.Shape), nsubs)
	case nsubs == len(t.Shape):
		return t.DType.SQLType(), nil
	}
	return TensorOf(t.DType, append([]int(nil), t.Shape[nsubs:]...)...), nil
}

// AppendSubscript appends to dst the result of subscripting the tensor
// value val of type t with the 1-based subscripts subs, as PostgreSQL
// does: NULL when any subscript is out of range; for a full set of
// subscripts the element (bool → Bools, integer dtypes → Ints, float dtypes
// → Floats, float16/bfloat16/float32 at float32 precision); for fewer the
// sub-tensor's bytes, typed as SubscriptType(t, len(subs)) says.
func AppendSubscript(dst *Vec, t Type, val []byte, subs []int64) {
	var buf [8]int
	dims, data := TensorDims(t, val, buf[:0])
	sz := t.DType.Size()
	if len(subs) > len(dims) || sz == 0 || !consistent(dims, len(data), sz) {
		dst.AppendNull()
		return
	}
	off := 0
	for k, s := range subs {
		if s < 1 || s > int64(dims[k]) {
			dst.AppendNull()
			return
		}
		off = off*dims[k] + int(s-1)
	}
	rest := dims[len(subs):]
	n := 1
	for _, d := range rest {
		n *= d
	}
	off *= n
	elems := data[off*sz : (off+n)*sz]
	if len(rest) == 0 {
		switch dt := t.DType; {
		case dt == DTBool:
			dst.AppendBool(elems[0] != 0)
		case dt.IsFloat():
			dst.AppendFloat(ElemFloat(dt, elems, 0))
		default:
			dst.AppendInt(ElemInt(dt, elems, 0))
		}
		return
	}
	dst.ensureOffsets()
	if TensorOf(t.DType, t.Shape[len(subs):]...).Ragged() {
		for _, d := range rest {
			dst.Bytes.Data = binary.LittleEndian.AppendUint32(dst.Bytes.Data, uint32(d))
		}
	}
	dst.Bytes.Data = append(dst.Bytes.Data, elems...)
	dst.Nulls = append(dst.Nulls, false)
	dst.Bytes.Offsets = append(dst.Bytes.Offsets, int32(len(dst.Bytes.Data)))
}

// consistent reports whether dims describe exactly n bytes of sz-byte
// elements, guarding against corrupt headers.
func consistent(dims []int, n, sz int) bool {
	for _, d := range dims {
		switch {
		case d == 0:
			return n == 0
		case d < 0:
			return false
		}
	}
	total := 1
	for _, d := range dims {
		if d > n/sz {
			return false
		}
		total *= d
		if total > n/sz {
			return false
		}
	}
	return total*sz == n
}

// ElemFloat returns element i of the tensor data of dtype dt as a float64;
// float16, bfloat16 and float32 elements are exact at float32 precision.
func ElemFloat(dt DType, data []byte, i int) float64 {
	switch dt {
	case DTFloat16:
		return float64(Float16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case DTBFloat16:
		return float64(BFloat16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case DTFloat32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	case DTFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return float64(ElemInt(dt, data, i))
}

// ElemInt returns element i of the tensor data of an integer or bool dtype.
func ElemInt(dt DType, data []byte, i int) int64 {
	switch dt {
	case DTBool, DTUint8:
		return int64(data[i])
	case DTInt8:
		return int64(int8(data[i]))
	case DTInt16:
		return int64(int16(binary.LittleEndian.Uint16(data[2*i:])))
	case DTInt32:
		return int64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	case DTInt64:
		return int64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return int64(ElemFloat(dt, data, i))
}

// AppendElemFloat appends f as one element of dtype dt (a float dtype),
// rounding to nearest even for the narrower ones.
func AppendElemFloat(dst []byte, dt DType, f float64) []byte {
	switch dt {
	case DTFloat16:
		return binary.LittleEndian.AppendUint16(dst, Float32ToFloat16(float32(f)))
	case DTBFloat16:
		return binary.LittleEndian.AppendUint16(dst, Float32ToBFloat16(float32(f)))
	case DTFloat32:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// AppendElemInt appends n, which must be in dt's range, as one element of
// the integer or bool dtype dt.
func AppendElemInt(dst []byte, dt DType, n int64) []byte {
	switch dt.Size() {
	case 1:
		return append(dst, byte(n))
	case 2:
		return binary.LittleEndian.AppendUint16(dst, uint16(n))
	case 4:
		return binary.LittleEndian.AppendUint32(dst, uint32(n))
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(n))
}

// AppendTensorText appends the tensor value val of type t as a PostgreSQL
// array literal: {1,2,3}, {{1,2},{3,4}}, an empty tensor as {}. Elements are
// formatted as their SQL element type: integers in decimal, float16,
// bfloat16 and float32 like real, float64 like double precision, bool as
// t/f. Corrupt bytes whose length disagrees with the dims print as a flat
// list of the whole elements present.
func AppendTensorText(dst []byte, t Type, val []byte) []byte {
	var buf [8]int
	dims, data := TensorDims(t, val, buf[:0])
	sz := t.DType.Size()
	if sz == 0 {
		return append(dst, "{}"...)
	}
	if !consistent(dims, len(data), sz) {
		dims = append(dims[:0], len(data)/sz)
	}
	for _, d := range dims[:1] {
		if d == 0 {
			return append(dst, "{}"...)
		}
	}
	dst, _ = appendTensorLevel(dst, t.DType, dims, data, 0)
	return dst
}

func appendTensorLevel(dst []byte, dt DType, dims []int, data []byte, off int) ([]byte, int) {
	dst = append(dst, '{')
	if len(dims) == 1 {
		for j := 0; j < dims[0]; j++ {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendTensorElem(dst, dt, data, off)
			off++
		}
	} else {
		for j := 0; j < dims[0]; j++ {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst, off = appendTensorLevel(dst, dt, dims[1:], data, off)
		}
	}
	return append(dst, '}'), off
}

func appendTensorElem(dst []byte, dt DType, data []byte, i int) []byte {
	switch dt {
	case DTBool:
		if data[i] != 0 {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case DTFloat16, DTBFloat16, DTFloat32:
		return AppendFloat4(dst, float32(ElemFloat(dt, data, i)))
	case DTFloat64:
		return AppendFloat8(dst, ElemFloat(dt, data, i))
	}
	return strconv.AppendInt(dst, ElemInt(dt, data, i), 10)
}

// AppendVectorText appends the vector value val as pgvector prints it:
// [1,2,3], each element formatted like real.
func AppendVectorText(dst []byte, val []byte) []byte {
	dst = append(dst, '[')
	for i := 0; i+4 <= len(val); i += 4 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendFloat4(dst, math.Float32frombits(binary.LittleEndian.Uint32(val[i:])))
	}
	return append(dst, ']')
}

// AppendVectorParsed parses s as pgvector's text input ([1,2,3], whitespace
// allowed) and appends the float32 elements to dst. dim, when positive, is
// the required dimension count. Errors: 22P02 bad syntax, 22003 an element
// beyond float32, 22000 for a dimension mismatch, an empty vector, NaN or
// an infinite element, 54000 above MaxVectorDims.
func AppendVectorParsed(dst []byte, dim int, s string) ([]byte, error) {
	return appendVectorParsed(dst, dim, s, false)
}

// AppendHalfVecParsed is AppendVectorParsed for halfvec: the elements are
// appended as IEEE binary16, and one beyond its range is 22003.
func AppendHalfVecParsed(dst []byte, dim int, s string) ([]byte, error) {
	return appendVectorParsed(dst, dim, s, true)
}

// AppendHalfVecText appends the halfvec value val as pgvector prints it.
func AppendHalfVecText(dst []byte, val []byte) []byte {
	dst = append(dst, '[')
	for i := 0; i+2 <= len(val); i += 2 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendFloat4(dst, Float16ToFloat32(binary.LittleEndian.Uint16(val[i:])))
	}
	return append(dst, ']')
}

// vectorName is the SQL name of a vector type, for errors.
func vectorName(t Type) string {
	if t.Kind == HalfVec {
		return "halfvec"
	}
	return "vector"
}

func appendVectorParsed(dst []byte, dim int, s string, half bool) ([]byte, error) {
	name := "vector"
	if half {
		name = "halfvec"
	}
	start := len(dst)
	fail := func(err error) ([]byte, error) { return dst[:start], err }
	bad := func() ([]byte, error) {
		return fail(pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", name, s))
	}
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return bad()
	}
	body := strings.TrimSpace(t[1 : len(t)-1])
	if body == "" {
		return fail(pgerror.Newf(pgerror.DataException, "%s must have at least 1 dimension", name))
	}
	n := 0
	for body != "" {
		var elem string
		if k := strings.IndexByte(body, ','); k >= 0 {
			elem, body = body[:k], body[k+1:]
			if strings.TrimSpace(body) == "" {
				return bad()
			}
		} else {
			elem, body = body, ""
		}
		elem = strings.TrimSpace(elem)
		if !floatSyntaxOK(elem) {
			return bad()
		}
		f, err := strconv.ParseFloat(elem, 32)
		switch {
		case err != nil && !math.IsInf(f, 0):
			return bad()
		case err != nil || (f == 0 && hasNonZeroMantissa(elem)):
			return fail(pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type %s", elem, name))
		case math.IsNaN(f):
			return fail(pgerror.Newf(pgerror.DataException, "NaN not allowed in %s", name))
		case math.IsInf(f, 0):
			return fail(pgerror.Newf(pgerror.DataException, "infinite value not allowed in %s", name))
		}
		n++
		if n > MaxVectorDims {
			return fail(pgerror.Newf(pgerror.ProgramLimitExceeded, "%s cannot have more than %d dimensions", name, MaxVectorDims))
		}
		if half {
			h := Float32ToFloat16(float32(f))
			if h&0x7fff == 0x7c00 {
				return fail(pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type halfvec", elem))
			}
			dst = binary.LittleEndian.AppendUint16(dst, h)
		} else {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
		}
	}
	if dim > 0 && n != dim {
		return fail(pgerror.Newf(pgerror.DataException, "expected %d dimensions, not %d", dim, n))
	}
	return dst, nil
}

// AppendTensorParsed parses s, a PostgreSQL array literal nested to
// len(t.Shape) levels ({{1,2},{3,4}}; [[1,2],[3,4]] is accepted too), and
// appends the tensor value in its Vec encoding to dst. Elements are parsed
// per dtype (integers range-checked, bool as t/f/true/false/...); NULL
// elements, wrong nesting depth, non-rectangular sub-arrays and dims that
// differ from t's fixed dims are 22000 errors; bad syntax is 22P02 and an
// element outside its dtype's range 22003.
func AppendTensorParsed(dst []byte, t Type, s string) ([]byte, error) {
	start := len(dst)
	nd := len(t.Shape)
	if nd == 0 || t.DType.Size() == 0 {
		return dst, pgerror.AssertionFailedf("tensor type %s without dims or dtype", t)
	}
	ragged := t.Ragged()
	if ragged {
		for range t.Shape {
			dst = append(dst, 0, 0, 0, 0)
		}
	}
	var dimBuf [8]int
	p := tensorParser{s: s, t: t, dims: dimBuf[:0], dst: dst}
	for range t.Shape {
		p.dims = append(p.dims, -1)
	}
	err := p.parse()
	dst = p.dst
	if err != nil {
		return dst[:start], err
	}
	for k, d := range p.dims {
		if d < 0 { // below an empty sub-array
			p.dims[k] = max(t.Shape[k], 0)
		}
	}
	for k, want := range t.Shape {
		if want != Ragged && p.dims[k] != want {
			return dst[:start], pgerror.Newf(pgerror.DataException,
				"tensor shape mismatch: expected %s, got %s", shapeString(t.Shape), shapeString(p.dims))
		}
	}
	if ragged {
		for k, d := range p.dims {
			binary.LittleEndian.PutUint32(dst[start+4*k:], uint32(d))
		}
	}
	return dst, nil
}

// shapeString formats dims as [2][3], a Ragged dim as [].
func shapeString(dims []int) string {
	var b strings.Builder
	for _, d := range dims {
		b.WriteByte('[')
		if d != Ragged {
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// tensorParser is the state of one AppendTensorParsed call.
type tensorParser struct {
	s     string
	pos   int
	t     Type
	dims  []int // length seen per level, -1 until the first sub-array ends
	dst   []byte
	elems int
}

func (p *tensorParser) malformed(detail string) error {
	return pgerror.Newf(pgerror.InvalidTextRepresentation, "malformed array literal: \"%s\"", p.s).WithDetail("%s", detail)
}

func (p *tensorParser) depthError() error {
	return pgerror.Newf(pgerror.DataException,
		"tensor literal has the wrong nesting depth: %s has %d dimensions", p.t, len(p.t.Shape))
}

func (p *tensorParser) skipWS() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			p.pos++
		default:
			return
		}
	}
}

func (p *tensorParser) parse() error {
	p.skipWS()
	if p.pos >= len(p.s) || (p.s[p.pos] != '{' && p.s[p.pos] != '[') {
		return p.malformed("Array value must start with \"{\" or dimension information.")
	}
	if err := p.level(0); err != nil {
		return err
	}
	p.skipWS()
	if p.pos < len(p.s) {
		return p.malformed("Junk after closing right brace.")
	}
	return nil
}

// level parses one sub-array at nesting level lvl; pos is at its opening
// bracket.
func (p *tensorParser) level(lvl int) error {
	closer := byte('}')
	if p.s[p.pos] == '[' {
		closer = ']'
	}
	p.pos++
	p.skipWS()
	count := 0
	if p.pos < len(p.s) && p.s[p.pos] == closer {
		p.pos++
		return p.setDim(lvl, 0)
	}
	for {
		p.skipWS()
		if p.pos >= len(p.s) {
			return p.malformed("Unexpected end of input.")
		}
		isOpen := p.s[p.pos] == '{' || p.s[p.pos] == '['
		switch {
		case lvl < len(p.dims)-1 && isOpen:
			if err := p.level(lvl + 1); err != nil {
				return err
			}
		case lvl < len(p.dims)-1 || isOpen:
			if !isOpen && (p.s[p.pos] == ',' || p.s[p.pos] == closer) {
				return p.malformed("Unexpected \"" + p.s[p.pos:p.pos+1] + "\" character.")
			}
			return p.depthError()
		default:
			if err := p.element(closer); err != nil {
				return err
			}
		}
		count++
		p.skipWS()
		if p.pos >= len(p.s) {
			return p.malformed("Unexpected end of input.")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case closer:
			p.pos++
			return p.setDim(lvl, count)
		default:
			return p.malformed("Unexpected \"" + p.s[p.pos:p.pos+1] + "\" character.")
		}
	}
}

func (p *tensorParser) setDim(lvl, n int) error {
	switch d := p.dims[lvl]; {
	case d < 0:
		p.dims[lvl] = n
	case d != n:
		return pgerror.Newf(pgerror.DataException,
			"tensor sub-arrays must have matching dimensions: dimension %d has length %d and %d (expected shape %s)",
			lvl+1, d, n, shapeString(p.t.Shape))
	}
	return nil
}

// element parses one element token (bare or double-quoted) and appends it.
func (p *tensorParser) element(closer byte) error {
	var tok string
	var scratch []byte
	if p.s[p.pos] == '"' {
		p.pos++
		begin := p.pos
		for {
			if p.pos >= len(p.s) {
				return p.malformed("Unexpected end of input.")
			}
			c := p.s[p.pos]
			if c == '"' {
				break
			}
			if c == '\\' {
				if scratch == nil {
					scratch = append([]byte(nil), p.s[begin:p.pos]...)
				}
				p.pos++
				if p.pos >= len(p.s) {
					return p.malformed("Unexpected end of input.")
				}
				c = p.s[p.pos]
			}
			if scratch != nil {
				scratch = append(scratch, c)
			}
			p.pos++
		}
		if scratch != nil {
			tok = string(scratch)
		} else {
			tok = p.s[begin:p.pos]
		}
		p.pos++
	} else {
		begin := p.pos
		for p.pos < len(p.s) {
			c := p.s[p.pos]
			if c == ',' || c == closer || c == '{' || c == '}' || c == '[' || c == ']' || c == '"' || c == '\\' {
				break
			}
			p.pos++
		}
		tok = strings.TrimSpace(p.s[begin:p.pos])
		if tok == "" {
			return p.malformed("Unexpected \"" + p.s[min(p.pos, len(p.s)-1):min(p.pos+1, len(p.s))] + "\" character.")
		}
		if strings.EqualFold(tok, "null") {
			return pgerror.New(pgerror.DataException, "tensor elements must not be null")
		}
	}
	p.elems++
	if p.elems > maxTensorElems {
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "tensor literal has more than %d elements", maxTensorElems)
	}
	var err error
	p.dst, err = appendElemParsed(p.dst, p.t.DType, tok)
	return err
}

// appendElemParsed parses tok as one element of dtype dt and appends it.
func appendElemParsed(dst []byte, dt DType, tok string) ([]byte, error) {
	switch dt {
	case DTBool:
		b, ok := parseBoolWord(strings.TrimSpace(tok))
		if !ok {
			return dst, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type boolean: \"%s\"", tok)
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case DTFloat64:
		f, err := parseFloat(tok, 64, "float64")
		if err != nil {
			return dst, err
		}
		return AppendElemFloat(dst, dt, f), nil
	case DTFloat32, DTFloat16, DTBFloat16:
		f, err := parseFloat(tok, 32, dt.String())
		if err != nil {
			return dst, err
		}
		switch dt {
		case DTFloat16:
			if h := Float32ToFloat16(float32(f)); h&0x7fff == 0x7c00 && !math.IsInf(f, 0) {
				return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type float16", tok)
			}
		case DTBFloat16:
			if h := Float32ToBFloat16(float32(f)); h&0x7fff == 0x7f80 && !math.IsInf(f, 0) {
				return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type bfloat16", tok)
			}
		}
		return AppendElemFloat(dst, dt, f), nil
	}
	n, err := parseIntRange(tok, math.MinInt64, math.MaxInt64)
	switch err {
	case nil:
	case errIntRange:
		return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "value \"%s\" is out of range for type %s", strings.TrimSpace(tok), dt)
	default:
		return dst, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", dt, tok)
	}
	if lo, hi := dt.MinMax(); n < lo || n > hi {
		return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "value %d is out of range for type %s", n, dt)
	}
	return AppendElemInt(dst, dt, n), nil
}

package storage

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/types"
)

// ZoneMap summarizes one column chunk for pruning: its row and NULL
// counts and, for bool, integer, float and text columns, bounds of its
// non-NULL values. Bounds may be wider than the data (long text is cut,
// see zoneTextLimit) but never narrower. Floats order as PostgreSQL does:
// NaN above everything and equal to itself; text compares bytewise.
type ZoneMap struct {
	Rows, NullCount int64
	// HasMinMax is set when the bounds below hold: some value is non-NULL
	// and the type keeps bounds.
	HasMinMax bool
	// Phys says which bounds are used: PhysBool and PhysInt use MinInt and
	// MaxInt (false 0, true 1), PhysFloat MinFloat and MaxFloat, PhysBytes
	// MinBytes and MaxBytes. It is 0 without bounds.
	Phys               types.Phys
	MinInt, MaxInt     int64
	MinFloat, MaxFloat float64
	MinBytes, MaxBytes []byte
}

// ZoneOp is a predicate `col OP value` a zone map can rule out.
type ZoneOp uint8

// Zone map predicates.
const (
	ZoneEq ZoneOp = iota + 1
	ZoneLt
	ZoneLe
	ZoneGt
	ZoneGe
	ZoneIsNull
	ZoneIsNotNull
	// ZoneIn is `col IN (values)`: every row of the value Vec.
	ZoneIn
)

var zoneOpNames = [...]string{ZoneEq: "=", ZoneLt: "<", ZoneLe: "<=", ZoneGt: ">", ZoneGe: ">=",
	ZoneIsNull: "IS NULL", ZoneIsNotNull: "IS NOT NULL", ZoneIn: "IN"}

// String returns the predicate as SQL spells it.
func (o ZoneOp) String() string {
	if int(o) < len(zoneOpNames) && zoneOpNames[o] != "" {
		return zoneOpNames[o]
	}
	return "invalid"
}

// zoneTextLimit is the longest text bound kept exactly. A longer minimum
// is cut to this many bytes (a prefix sorts first); a longer maximum is
// cut, its trailing 0xff bytes dropped and its last byte incremented (it
// sorts after every value with that prefix). A maximum made only of 0xff
// bytes, which valid UTF-8 never holds, leaves the zone map without
// bounds.
const zoneTextLimit = 64

// computeZoneMap returns the zone map of rows [from,to) of v, of type typ.
// Its bounds do not alias v.
func computeZoneMap(typ types.Type, v *types.Vec, from, to int) ZoneMap {
	z := ZoneMap{Rows: int64(to - from), NullCount: int64(nullCount(v.Nulls[from:to]))}
	if z.NullCount == z.Rows {
		return z
	}
	switch physKind(typ.Kind) {
	case types.Bool:
		z.Phys, z.MinInt, z.MaxInt = types.PhysBool, 1, 0
		for i := from; i < to; i++ {
			if !v.Nulls[i] {
				b := int64(0)
				if v.Bools[i] {
					b = 1
				}
				z.MinInt, z.MaxInt = min(z.MinInt, b), max(z.MaxInt, b)
			}
		}
	case types.Int2, types.Int4, types.Int8:
		z.Phys, z.MinInt, z.MaxInt = types.PhysInt, math.MaxInt64, math.MinInt64
		for i := from; i < to; i++ {
			if !v.Nulls[i] {
				x := v.Ints[i]
				z.MinInt, z.MaxInt = min(z.MinInt, x), max(z.MaxInt, x)
			}
		}
	case types.Float4, types.Float8:
		z.Phys = types.PhysFloat
		first := true
		for i := from; i < to; i++ {
			if v.Nulls[i] {
				continue
			}
			f := v.Floats[i]
			if first {
				z.MinFloat, z.MaxFloat, first = f, f, false
				continue
			}
			if types.CompareFloat(f, z.MinFloat) < 0 {
				z.MinFloat = f
			}
			if types.CompareFloat(f, z.MaxFloat) > 0 {
				z.MaxFloat = f
			}
		}
	case types.Text, types.Varchar:
		var lo, hi []byte
		first := true
		for i := from; i < to; i++ {
			if v.Nulls[i] {
				continue
			}
			b := v.Bytes.Get(i)
			if first {
				lo, hi, first = b, b, false
				continue
			}
			if bytes.Compare(b, lo) < 0 {
				lo = b
			}
			if bytes.Compare(b, hi) > 0 {
				hi = b
			}
		}
		lo = lo[:min(len(lo), zoneTextLimit)]
		upper, ok := textUpperBound(hi)
		if !ok {
			return z
		}
		buf := make([]byte, len(lo)+len(upper))
		copy(buf, lo)
		copy(buf[len(lo):], upper)
		z.Phys, z.MinBytes, z.MaxBytes = types.PhysBytes, buf[:len(lo):len(lo)], buf[len(lo):]
	default:
		return z
	}
	z.HasMinMax = true
	return z
}

// textUpperBound returns an upper bound of b at most zoneTextLimit bytes
// long (b itself when short enough; it may alias b). ok is false when no
// such bound exists.
func textUpperBound(b []byte) (bound []byte, ok bool) {
	if len(b) <= zoneTextLimit {
		return b, true
	}
	p := b[:zoneTextLimit]
	for len(p) > 0 && p[len(p)-1] == 0xff {
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		return nil, false
	}
	u := make([]byte, len(p))
	copy(u, p)
	u[len(u)-1]++
	return u, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Merge widens z to also summarize the chunk o summarizes. Bounds it takes
// from o may alias o's.
func (z *ZoneMap) Merge(o ZoneMap) {
	zVals, oVals := z.Rows > z.NullCount, o.Rows > o.NullCount
	z.Rows += o.Rows
	z.NullCount += o.NullCount
	switch {
	case !oVals:
	case !zVals:
		z.HasMinMax, z.Phys = o.HasMinMax, o.Phys
		z.MinInt, z.MaxInt, z.MinFloat, z.MaxFloat = o.MinInt, o.MaxInt, o.MinFloat, o.MaxFloat
		z.MinBytes, z.MaxBytes = o.MinBytes, o.MaxBytes
	case !z.HasMinMax || !o.HasMinMax || z.Phys != o.Phys:
		*z = ZoneMap{Rows: z.Rows, NullCount: z.NullCount}
	default:
		z.MinInt, z.MaxInt = min(z.MinInt, o.MinInt), max(z.MaxInt, o.MaxInt)
		if types.CompareFloat(o.MinFloat, z.MinFloat) < 0 {
			z.MinFloat = o.MinFloat
		}
		if types.CompareFloat(o.MaxFloat, z.MaxFloat) > 0 {
			z.MaxFloat = o.MaxFloat
		}
		if bytes.Compare(o.MinBytes, z.MinBytes) < 0 {
			z.MinBytes = o.MinBytes
		}
		if bytes.Compare(o.MaxBytes, z.MaxBytes) > 0 {
			z.MaxBytes = o.MaxBytes
		}
	}
}

// MayContain reports false only when no row of the chunk can satisfy
// `col OP value`, value being row i of v (for ZoneIn, `col IN (v's
// rows)`). A NULL value satisfies no comparison; ZoneIsNull and
// ZoneIsNotNull ignore v. Values of another physical layout than the
// bounds are compared as PostgreSQL would after promoting integers to
// float; anything else may match.
func (z *ZoneMap) MayContain(op ZoneOp, v *types.Vec, i int) bool {
	switch op {
	case ZoneIsNull:
		return z.NullCount > 0
	case ZoneIsNotNull:
		return z.NullCount < z.Rows
	case ZoneIn:
		// Any of the values (i is not used).
		if v == nil {
			return true
		}
		for r := range v.Len() {
			if z.MayContain(ZoneEq, v, r) {
				return true
			}
		}
		return false
	case ZoneEq, ZoneLt, ZoneLe, ZoneGt, ZoneGe:
	default:
		return true
	}
	if z.Rows <= z.NullCount {
		return false
	}
	if v == nil || i < 0 || i >= v.Len() {
		return true
	}
	if v.Nulls[i] {
		return false
	}
	if !z.HasMinMax {
		return true
	}
	lo, hi, ok := z.cmpBounds(v, i)
	if !ok {
		return true
	}
	switch op {
	case ZoneEq:
		return lo <= 0 && hi >= 0
	case ZoneLt:
		return lo < 0
	case ZoneLe:
		return lo <= 0
	case ZoneGt:
		return hi > 0
	}
	return hi >= 0 // ZoneGe
}

// cmpBounds compares z's minimum and maximum with row i of v.
func (z *ZoneMap) cmpBounds(v *types.Vec, i int) (lo, hi int, ok bool) {
	vp := v.Type.Phys()
	switch {
	case z.Phys == types.PhysBool && vp == types.PhysBool:
		c := int64(0)
		if v.Bools[i] {
			c = 1
		}
		return cmpInt(z.MinInt, c), cmpInt(z.MaxInt, c), true
	case z.Phys == types.PhysInt && vp == types.PhysInt:
		c := v.Ints[i]
		return cmpInt(z.MinInt, c), cmpInt(z.MaxInt, c), true
	case z.Phys == types.PhysInt && vp == types.PhysFloat:
		// Rounding int64 to float64 keeps order, so rounded bounds still bound.
		c := v.Floats[i]
		return types.CompareFloat(float64(z.MinInt), c), types.CompareFloat(float64(z.MaxInt), c), true
	case z.Phys == types.PhysFloat && (vp == types.PhysFloat || vp == types.PhysInt):
		var c float64
		if vp == types.PhysInt {
			c = float64(v.Ints[i])
		} else {
			c = v.Floats[i]
		}
		return types.CompareFloat(z.MinFloat, c), types.CompareFloat(z.MaxFloat, c), true
	case z.Phys == types.PhysBytes && vp == types.PhysBytes:
		c := v.Bytes.Get(i)
		return bytes.Compare(z.MinBytes, c), bytes.Compare(z.MaxBytes, c), true
	}
	return 0, 0, false
}

// zoneFlagBounds marks an encoded zone map with bounds.
const zoneFlagBounds = 1

// AppendBinary appends z's compact encoding (see docs/storage-format.md):
// flags u8, phys u8, uvarint rows, uvarint nulls, then the bounds.
func (z ZoneMap) AppendBinary(dst []byte) []byte {
	flags, phys := byte(0), byte(0)
	if z.HasMinMax {
		flags, phys = zoneFlagBounds, byte(z.Phys)
	}
	dst = append(dst, flags, phys)
	dst = binary.AppendUvarint(dst, uint64(z.Rows))
	dst = binary.AppendUvarint(dst, uint64(z.NullCount))
	if !z.HasMinMax {
		return dst
	}
	switch z.Phys {
	case types.PhysBool, types.PhysInt:
		dst = binary.AppendVarint(dst, z.MinInt)
		dst = binary.AppendVarint(dst, z.MaxInt)
	case types.PhysFloat:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(z.MinFloat))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(z.MaxFloat))
	case types.PhysBytes:
		dst = binary.AppendUvarint(dst, uint64(len(z.MinBytes)))
		dst = append(dst, z.MinBytes...)
		dst = binary.AppendUvarint(dst, uint64(len(z.MaxBytes)))
		dst = append(dst, z.MaxBytes...)
	}
	return dst
}

// DecodeZoneMap decodes a zone map written by AppendBinary from the start
// of b and returns the bytes after it. Its bounds do not alias b. Errors
// wrap ErrCorruption.
func DecodeZoneMap(b []byte) (ZoneMap, []byte, error) {
	var z ZoneMap
	if len(b) < 2 {
		return z, nil, corruptionf("zone map: truncated")
	}
	flags, phys := b[0], types.Phys(b[1])
	b = b[2:]
	rows, n := binary.Uvarint(b)
	if n <= 0 || rows > math.MaxInt64 {
		return z, nil, corruptionf("zone map: bad row count")
	}
	b = b[n:]
	nulls, n := binary.Uvarint(b)
	if n <= 0 || nulls > rows {
		return z, nil, corruptionf("zone map: bad NULL count")
	}
	b = b[n:]
	z.Rows, z.NullCount = int64(rows), int64(nulls)
	switch {
	case flags == 0 && phys == 0:
		return z, b, nil
	case flags != zoneFlagBounds || phys < types.PhysBool || phys > types.PhysBytes || rows == nulls:
		return z, nil, corruptionf("zone map: bad flags %#x, layout %d", flags, phys)
	}
	z.HasMinMax, z.Phys = true, phys
	switch phys {
	case types.PhysBool, types.PhysInt:
		lo, n1 := binary.Varint(b)
		if n1 <= 0 {
			return z, nil, corruptionf("zone map: bad minimum")
		}
		hi, n2 := binary.Varint(b[n1:])
		if n2 <= 0 || lo > hi || (phys == types.PhysBool && (lo < 0 || hi > 1)) {
			return z, nil, corruptionf("zone map: bad bounds")
		}
		z.MinInt, z.MaxInt, b = lo, hi, b[n1+n2:]
	case types.PhysFloat:
		if len(b) < 16 {
			return z, nil, corruptionf("zone map: truncated bounds")
		}
		z.MinFloat = math.Float64frombits(binary.LittleEndian.Uint64(b))
		z.MaxFloat = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		if types.CompareFloat(z.MinFloat, z.MaxFloat) > 0 {
			return z, nil, corruptionf("zone map: bad bounds")
		}
		b = b[16:]
	default:
		lo, rest, ok := uvarintBytes(b)
		if !ok {
			return z, nil, corruptionf("zone map: bad minimum")
		}
		hi, rest, ok := uvarintBytes(rest)
		if !ok || bytes.Compare(lo, hi) > 0 {
			return z, nil, corruptionf("zone map: bad bounds")
		}
		buf := make([]byte, len(lo)+len(hi))
		copy(buf, lo)
		copy(buf[len(lo):], hi)
		z.MinBytes, z.MaxBytes, b = buf[:len(lo):len(lo)], buf[len(lo):], rest
	}
	return z, b, nil
}

// uvarintBytes reads a uvarint length and that many bytes from b.
func uvarintBytes(b []byte) (val, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

package types

import "slices"

// Vec is one typed column of a batch. Exactly one of the value slices is in
// use, chosen by Type.Phys(): Bools, Ints (every integer kind, as int64),
// Floats (float4 and float8, as float64) or Bytes (everything else: text,
// bytea, JSON, vectors and tensors in their encoded form, see tensor.go).
// Nulls[i] is true when row i is NULL; a NULL row still occupies a slot.
//
// Vecs are reused: Reset keeps capacity, so a steady-state scan allocates nothing.
type Vec struct {
	Type   Type
	Nulls  []bool
	Bools  []bool
	Ints   []int64
	Floats []float64
	Bytes  Bytes
}

// Bytes holds variable-length values back to back: value i is
// Data[Offsets[i]:Offsets[i+1]]. Offsets has Len()+1 entries once used.
type Bytes struct {
	Data    []byte
	Offsets []int32
}

// Get returns value i; the slice aliases Data.
func (b *Bytes) Get(i int) []byte { return b.Data[b.Offsets[i]:b.Offsets[i+1]] }

// NewVec returns an empty Vec of type t with room for capacity rows.
func NewVec(t Type, capacity int) *Vec {
	v := &Vec{Type: t, Nulls: make([]bool, 0, capacity)}
	switch t.Phys() {
	case PhysBool:
		v.Bools = make([]bool, 0, capacity)
	case PhysInt:
		v.Ints = make([]int64, 0, capacity)
	case PhysFloat:
		v.Floats = make([]float64, 0, capacity)
	default:
		v.Bytes.Offsets = make([]int32, 1, capacity+1)
	}
	return v
}

// Len returns the number of rows.
func (v *Vec) Len() int { return len(v.Nulls) }

// Reset empties v, keeping its type and capacity.
func (v *Vec) Reset() {
	v.Nulls = v.Nulls[:0]
	v.Bools = v.Bools[:0]
	v.Ints = v.Ints[:0]
	v.Floats = v.Floats[:0]
	v.Bytes.Data = v.Bytes.Data[:0]
	if cap(v.Bytes.Offsets) == 0 {
		v.Bytes.Offsets = make([]int32, 1, 16)
	}
	v.Bytes.Offsets = v.Bytes.Offsets[:1]
	v.Bytes.Offsets[0] = 0
}

// SetType resets v and gives it type t.
func (v *Vec) SetType(t Type) {
	v.Type = t
	v.Reset()
}

// IsNull reports whether row i is NULL.
func (v *Vec) IsNull(i int) bool { return v.Nulls[i] }

// HasNulls reports whether any row is NULL.
func (v *Vec) HasNulls() bool {
	for _, n := range v.Nulls {
		if n {
			return true
		}
	}
	return false
}

// AppendNull appends a NULL row.
func (v *Vec) AppendNull() {
	v.Nulls = append(v.Nulls, true)
	switch v.Type.Phys() {
	case PhysBool:
		v.Bools = append(v.Bools, false)
	case PhysInt:
		v.Ints = append(v.Ints, 0)
	case PhysFloat:
		v.Floats = append(v.Floats, 0)
	default:
		v.ensureOffsets()
		v.Bytes.Offsets = append(v.Bytes.Offsets, int32(len(v.Bytes.Data)))
	}
}

// AppendBool appends a non-NULL bool.
func (v *Vec) AppendBool(b bool) {
	v.Nulls = append(v.Nulls, false)
	v.Bools = append(v.Bools, b)
}

// AppendInt appends a non-NULL integer.
func (v *Vec) AppendInt(i int64) {
	v.Nulls = append(v.Nulls, false)
	v.Ints = append(v.Ints, i)
}

// AppendFloat appends a non-NULL float.
func (v *Vec) AppendFloat(f float64) {
	v.Nulls = append(v.Nulls, false)
	v.Floats = append(v.Floats, f)
}

// AppendBytes appends a non-NULL variable-length value (copied).
func (v *Vec) AppendBytes(b []byte) {
	v.ensureOffsets()
	v.Nulls = append(v.Nulls, false)
	v.Bytes.Data = append(v.Bytes.Data, b...)
	v.Bytes.Offsets = append(v.Bytes.Offsets, int32(len(v.Bytes.Data)))
}

// AppendString appends a non-NULL string value.
func (v *Vec) AppendString(s string) {
	v.ensureOffsets()
	v.Nulls = append(v.Nulls, false)
	v.Bytes.Data = append(v.Bytes.Data, s...)
	v.Bytes.Offsets = append(v.Bytes.Offsets, int32(len(v.Bytes.Data)))
}

func (v *Vec) ensureOffsets() {
	if len(v.Bytes.Offsets) == 0 {
		v.Bytes.Offsets = append(v.Bytes.Offsets, 0)
	}
}

// AppendedBytes ends a non-NULL value whose bytes the caller appended to
// Bytes.Data itself since the last value (the numeric kernels encode in
// place, without a temporary).
func (v *Vec) AppendedBytes() {
	v.ensureOffsets()
	v.Nulls = append(v.Nulls, false)
	v.Bytes.Offsets = append(v.Bytes.Offsets, int32(len(v.Bytes.Data)))
}

// AppendEncoded appends the value enc appends to Bytes.Data; on error v
// is unchanged.
func (v *Vec) AppendEncoded(enc func(dst []byte) ([]byte, error)) error { return v.appendEncoded(enc) }

// Truncate keeps the first n rows of v (all, when it has no more).
func (v *Vec) Truncate(n int) {
	if v.Len() <= n {
		return
	}
	v.Nulls = v.Nulls[:n]
	switch v.Type.Phys() {
	case PhysBool:
		v.Bools = v.Bools[:n]
	case PhysInt:
		v.Ints = v.Ints[:n]
	case PhysFloat:
		v.Floats = v.Floats[:n]
	default:
		v.Bytes.Data = v.Bytes.Data[:v.Bytes.Offsets[n]]
		v.Bytes.Offsets = v.Bytes.Offsets[:n+1]
	}
}

// GetBytes returns variable-length value i (aliasing v's memory).
func (v *Vec) GetBytes(i int) []byte { return v.Bytes.Get(i) }

// AppendFrom appends row i of src, which must have the same physical layout.
func (v *Vec) AppendFrom(src *Vec, i int) {
	if src.Nulls[i] {
		v.AppendNull()
		return
	}
	switch v.Type.Phys() {
	case PhysBool:
		v.AppendBool(src.Bools[i])
	case PhysInt:
		v.AppendInt(src.Ints[i])
	case PhysFloat:
		v.AppendFloat(src.Floats[i])
	default:
		v.AppendBytes(src.Bytes.Get(i))
	}
}

// AppendVec appends every row of src, which must have the same physical layout.
func (v *Vec) AppendVec(src *Vec) {
	switch v.Type.Phys() {
	case PhysBool:
		v.Bools = append(doubled(v.Bools, len(src.Bools)), src.Bools...)
	case PhysInt:
		v.Ints = append(doubled(v.Ints, len(src.Ints)), src.Ints...)
	case PhysFloat:
		v.Floats = append(doubled(v.Floats, len(src.Floats)), src.Floats...)
	default:
		v.ensureOffsets()
		base := v.Bytes.Offsets[len(v.Bytes.Offsets)-1] - src.Bytes.Offsets[0]
		data := src.Bytes.Data[src.Bytes.Offsets[0]:src.Bytes.Offsets[len(src.Nulls)]]
		v.Bytes.Data = append(doubled(v.Bytes.Data, len(data)), data...)
		v.Bytes.Offsets = doubled(v.Bytes.Offsets, len(src.Nulls))
		for _, o := range src.Bytes.Offsets[1 : len(src.Nulls)+1] {
			v.Bytes.Offsets = append(v.Bytes.Offsets, o+base)
		}
	}
	v.Nulls = append(doubled(v.Nulls, len(src.Nulls)), src.Nulls...)
}

// doubled returns s with room for n more elements, doubling its capacity
// when it has too little: a vector that gathers many batches (a hash
// join's build side, a sort's rows) would otherwise be copied again at
// every quarter append adds past 256 elements.
func doubled[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	return slices.Grow(s, max(n, len(s)))
}

// Batch is a set of equally long column vectors.
type Batch struct {
	Cols []*Vec
	n    int
}

// NewBatch returns an empty batch with one Vec per type.
func NewBatch(ts []Type, capacity int) *Batch {
	b := &Batch{Cols: make([]*Vec, len(ts))}
	for i, t := range ts {
		b.Cols[i] = NewVec(t, capacity)
	}
	return b
}

// Len returns the number of rows. A batch without columns (SELECT count(*)
// input, say) keeps its own count, set with SetLen.
func (b *Batch) Len() int {
	if len(b.Cols) > 0 {
		return b.Cols[0].Len()
	}
	return b.n
}

// SetLen sets the row count of a batch without columns.
func (b *Batch) SetLen(n int) { b.n = n }

// Reset empties every column, keeping capacity.
func (b *Batch) Reset() {
	for _, c := range b.Cols {
		c.Reset()
	}
	b.n = 0
}

// BatchSize is the number of rows operators aim to put in a batch.
const BatchSize = 1024

// Window sets dst to a view of rows [lo, hi) of b that shares b's memory:
// it is read-only and valid as long as b's rows are. dst's Vec headers are
// reused, so a window costs no allocation once dst has its columns.
func (b *Batch) Window(dst *Batch, lo, hi int) {
	for len(dst.Cols) < len(b.Cols) {
		dst.Cols = append(dst.Cols, new(Vec))
	}
	dst.Cols = dst.Cols[:len(b.Cols)]
	for i, v := range b.Cols {
		dst.Cols[i].Window(v, lo, hi)
	}
	dst.n = hi - lo
}

// Window sets v to a view of rows [lo, hi) of src that shares src's
// memory: it is read-only (a bytes value's offsets point into src's data)
// and valid as long as src's rows are.
func (v *Vec) Window(src *Vec, lo, hi int) {
	*v = Vec{Type: src.Type, Nulls: src.Nulls[lo:hi:hi]}
	switch src.Type.Phys() {
	case PhysBool:
		v.Bools = src.Bools[lo:hi:hi]
	case PhysInt:
		v.Ints = src.Ints[lo:hi:hi]
	case PhysFloat:
		v.Floats = src.Floats[lo:hi:hi]
	default:
		v.Bytes = Bytes{Data: src.Bytes.Data[:len(src.Bytes.Data):len(src.Bytes.Data)], Offsets: src.Bytes.Offsets[lo : hi+1 : hi+1]}
	}
}

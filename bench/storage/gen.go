package main

import (
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
)

// Row shape of the benchmark table.
const (
	embDims   = 768
	tokenLen  = 512
	vocabSize = 50_000
	// rawRowBytes is a row's raw size: id 8, emb 768×4, tokens 512×4, label 4.
	rawRowBytes = 8 + 4*embDims + 4*tokenLen + 4
)

// embForm says how the emb field is sent: pgvector's binary form
// (deeplaked's vector(768)) or PostgreSQL's float4 array (real[]).
type embForm int

const (
	embVector embForm = iota + 1
	embFloat4Array
)

const (
	oidInt4   = 23
	oidFloat4 = 700
)

// zipfTableBits sizes the inverse-CDF table of the token distribution:
// 2^22 entries resolve probabilities down to 2.4e-7, below the rarest id's
// (≈9e-7 for Zipf s=1.1 over 50,000 ids).
const zipfTableBits = 22

// zipfTable maps a uniform 22-bit number to a token id in 1..vocabSize
// with P(k) ∝ k^-1.1: the same law as storage's chunk benchmark
// (rand.NewZipf(rng, 1.1, 1, 49999)), shifted by one so that 0 is only
// the padding id. A table lookup keeps the client's cost per token at a
// few nanoseconds, so the generator is not what a server waits for.
var zipfTable = func() []uint16 {
	const s = 1.1
	cdf := make([]float64, vocabSize)
	sum := 0.0
	for k := range vocabSize {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	t := make([]uint16, 1<<zipfTableBits)
	k := 0
	for i := range t {
		u := (float64(i) + 0.5) / float64(len(t)) * sum
		for cdf[k] < u {
			k++
		}
		t[i] = uint16(k + 1)
	}
	return t
}()

// copyGen is an io.Reader of a PostgreSQL binary COPY stream of rows
// (id int8, emb, tokens int4[512], label int4), generated as it is read:
// random float embeddings in [-1, 1], token sequences of 128 to 512
// Zipf-distributed ids padded with zeros to 512, labels in 0..999. Two
// generators with the same seed produce the same values; only emb's
// encoding depends on the form.
type copyGen struct {
	rng  *rand.Rand
	rows int64 // rows left to generate
	next int64 // id of the next row
	buf  []byte
	off  int
	// tmpl is a row with zero values, layout where its values go.
	tmpl   []byte
	layout rowLayout
	done   bool
	// Bytes counts the bytes read so far.
	Bytes int64
}

func newCopyGen(seed uint64, rows int64, form embForm) *copyGen {
	g := &copyGen{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), rows: rows, next: 1}
	g.tmpl, g.layout = rowTemplate(form)
	g.buf = append(g.buf, "PGCOPY\n\xff\r\n\x00"...)
	g.buf = binary.BigEndian.AppendUint32(g.buf, 0) // flags
	g.buf = binary.BigEndian.AppendUint32(g.buf, 0) // header extension length
	return g
}

// Read fills p with the next bytes of the stream.
func (g *copyGen) Read(p []byte) (int, error) {
	if g.off == len(g.buf) {
		if g.done {
			return 0, io.EOF
		}
		g.fill()
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	g.Bytes += int64(n)
	return n, nil
}

// fill generates about 256 KiB of rows into buf, and the trailer after
// the last row.
func (g *copyGen) fill() {
	if g.off > 0 {
		g.buf, g.off = g.buf[:0], 0
	}
	for len(g.buf) < 256<<10 && g.rows > 0 {
		g.buf = g.appendRow(g.buf)
		g.rows--
	}
	if g.rows == 0 {
		g.buf = binary.BigEndian.AppendUint16(g.buf, 0xffff)
		g.done = true
	}
}

// rowTemplate returns a row of the stream with every length, array header
// and padding in place and zero values; appendRow copies it and fills the
// values in, at the offsets rowLayout gives.
func rowTemplate(form embForm) (tmpl []byte, l rowLayout) {
	be := binary.BigEndian
	b := be.AppendUint16(nil, 4)
	b = be.AppendUint32(b, 8)
	l.id = len(b)
	b = append(b, make([]byte, 8)...)
	switch form {
	case embVector:
		b = be.AppendUint32(b, 4+4*embDims)
		b = be.AppendUint16(b, embDims)
		b = be.AppendUint16(b, 0)
		l.emb, l.embStride = len(b), 4
		b = append(b, make([]byte, 4*embDims)...)
	case embFloat4Array:
		b = be.AppendUint32(b, 20+8*embDims)
		b = appendArrayHeader(b, oidFloat4, embDims)
		l.emb, l.embStride = len(b)+4, 8
		for range embDims {
			b = be.AppendUint32(b, 4)
			b = be.AppendUint32(b, 0)
		}
	}
	b = be.AppendUint32(b, 20+8*tokenLen)
	b = appendArrayHeader(b, oidInt4, tokenLen)
	l.tokens = len(b) + 4
	for range tokenLen {
		b = be.AppendUint32(b, 4)
		b = be.AppendUint32(b, 0)
	}
	b = be.AppendUint32(b, 4)
	l.label = len(b)
	b = be.AppendUint32(b, 0)
	return b, l
}

// rowLayout holds the offsets of a row's values in its template.
type rowLayout struct {
	id, emb, embStride, tokens, label int
}

func (g *copyGen) appendRow(b []byte) []byte {
	be := binary.BigEndian
	start := len(b)
	b = append(b, g.tmpl...)
	r := b[start:]
	l := &g.layout

	be.PutUint64(r[l.id:], uint64(g.next))
	g.next++

	e := r[l.emb:]
	for i := 0; i < embDims; i += 2 {
		u := g.rng.Uint64()
		be.PutUint32(e[i*l.embStride:], math.Float32bits(unitFloat(uint32(u))))
		be.PutUint32(e[(i+1)*l.embStride:], math.Float32bits(unitFloat(uint32(u>>32))))
	}

	t := r[l.tokens:]
	n := 128 + g.rng.IntN(tokenLen-128+1)
	for k := range n {
		be.PutUint32(t[8*k:], uint32(zipfTable[g.rng.Uint64()>>(64-zipfTableBits)]))
	}
	// The template's padding is already zero.

	be.PutUint32(r[l.label:], uint32(g.rng.IntN(1000)))
	return b
}

// unitFloat maps 32 random bits to a float32 in [-1, 1].
func unitFloat(u uint32) float32 { return float32(int32(u)) * (1.0 / (1 << 31)) }

// appendArrayHeader appends a one-dimensional, NULL-free array header:
// ndim, flags, element OID, length, lower bound 1.
func appendArrayHeader(b []byte, oid uint32, n int) []byte {
	be := binary.BigEndian
	b = be.AppendUint32(b, 1)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, oid)
	b = be.AppendUint32(b, uint32(n))
	return be.AppendUint32(b, 1)
}

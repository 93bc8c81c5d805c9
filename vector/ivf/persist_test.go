package ivf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
)

func TestWriteReadRoundTrip(t *testing.T) {
	const dim, n = 24, 3000
	vecs := clustered(n, dim, 15, 21)
	queries := perturb(clustered(40, dim, 15, 21), 22)
	ids := seqIDs(n, 1<<40)
	keep := func(id uint64) bool { return id%7 == 0 }
	for _, m := range metrics {
		x := build(t, Config{Dim: dim, Lists: 30, Metric: m, Seed: 9}, ids, vecs, 0)
		for i := 0; i < n; i += 11 {
			x.Delete(ids[i])
		}
		var buf bytes.Buffer
		wn, err := x.WriteTo(&buf)
		if err != nil || wn != int64(buf.Len()) {
			t.Fatalf("WriteTo: %d, %v (wrote %d)", wn, err, buf.Len())
		}
		stored := slices.Clone(buf.Bytes())
		buf.WriteString("trailing bytes are not read")
		y, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != "trailing bytes are not read" {
			t.Fatal("Read read past the index")
		}
		if y.Config() != x.Config() || y.Len() != x.Len() || y.Deleted() != x.Deleted() || y.Lists() != x.Lists() {
			t.Fatalf("%v: loaded %+v %d %d %d, want %+v %d %d %d", m, y.Config(), y.Len(), y.Deleted(), y.Lists(),
				x.Config(), x.Len(), x.Deleted(), x.Lists())
		}
		for _, filter := range []func(uint64) bool{nil, keep} {
			for _, p := range []int{1, 4} {
				for i := range 40 {
					q := queries[i*dim : (i+1)*dim]
					a, _ := x.Search(q, 10, p, filter, nil)
					b, _ := y.Search(q, 10, p, filter, nil)
					if !slices.Equal(a, b) {
						t.Fatalf("%v: query %d: %v after loading, %v before", m, i, b, a)
					}
				}
			}
		}
		var again bytes.Buffer
		y.WriteTo(&again)
		if !bytes.Equal(again.Bytes(), stored) {
			t.Fatalf("%v: a loaded index writes different bytes", m)
		}
		// The loaded index takes new rows and deletes.
		if err := y.Add(ids[0], vecs[:dim]); err != nil {
			t.Fatal(err)
		}
		if err := y.Add(ids[1], vecs[:dim]); !errors.Is(err, ErrDuplicateID) {
			t.Fatalf("live id after loading: %v", err)
		}
		if !y.Delete(ids[1]) || y.Contains(ids[1]) {
			t.Fatal("Delete after loading")
		}
	}
	// An untrained index round-trips and trains on its first batch.
	x, _ := New(Config{Dim: 3, Lists: 4, Metric: L2})
	var buf bytes.Buffer
	x.WriteTo(&buf)
	y, err := Read(&buf)
	if err != nil || y.Trained() {
		t.Fatalf("untrained: %v, trained %v", err, y != nil && y.Trained())
	}
	if err := y.AddBatch(seqIDs(10, 0), clustered(10, 3, 2, 1), 1); err != nil || y.Lists() != 4 {
		t.Fatalf("%v, %d lists", err, y.Lists())
	}
}

func smallIndexBytes(t testing.TB, m Metric) []byte {
	t.Helper()
	const dim = 4
	x := build(t, Config{Dim: dim, Lists: 5, Metric: m, Seed: 1}, seqIDs(40, 100), clustered(40, dim, 4, 3), 1)
	x.Delete(105)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every flipped byte and every truncation is caught, as ErrCorrupt.
func TestReadCorrupt(t *testing.T) {
	for _, m := range metrics {
		data := smallIndexBytes(t, m)
		for i := range data {
			bad := slices.Clone(data)
			bad[i] ^= 0x41
			if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: byte %d flipped: %v", m, i, err)
			}
		}
		for n := range len(data) {
			if _, err := Read(bytes.NewReader(data[:n])); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: truncated to %d: %v", m, n, err)
			}
		}
	}
}

// fixChecksums recomputes both checksums of a stored index, so that damage
// behind them reaches the structural checks.
func fixChecksums(data []byte) {
	if len(data) < headerSize+4 {
		return
	}
	le := binary.LittleEndian
	le.PutUint32(data[52:], crc32.Checksum(data[:52], castagnoli))
	body := data[headerSize : len(data)-4]
	le.PutUint32(data[len(data)-4:], crc32.Checksum(body, castagnoli))
}

// Damage behind valid checksums is caught by the structural checks.
func TestReadCorruptStructure(t *testing.T) {
	data := smallIndexBytes(t, Cosine)
	le := binary.LittleEndian
	const dim, lists = 4, 5
	countsAt := headerSize + lists*dim*4
	firstList := countsAt + lists*8
	n0 := int(le.Uint64(data[countsAt:]))
	for name, damage := range map[string]func(b []byte){
		"more centroids than lists": func(b []byte) { le.PutUint32(b[32:], lists+1) },
		"rows do not add up":        func(b []byte) { le.PutUint64(b[36:], le.Uint64(b[36:])+1) },
		"tombstone count":           func(b []byte) { le.PutUint64(b[44:], 0) },
		"zero lists config":         func(b []byte) { le.PutUint32(b[16:], 0) },
		"bad metric":                func(b []byte) { le.PutUint32(b[20:], 9) },
		"list sizes":                func(b []byte) { le.PutUint64(b[countsAt:], uint64(n0+1)) },
		"centroid not unit":         func(b []byte) { le.PutUint32(b[headerSize:], 0x40000000) },
		"row state":                 func(b []byte) { b[firstList+8*n0] = 7 },
		"duplicate live id": func(b []byte) {
			copy(b[firstList+8:firstList+16], b[firstList:firstList+8])
		},
	} {
		bad := slices.Clone(data)
		damage(bad)
		fixChecksums(bad)
		if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, m := range metrics {
		f.Add(smallIndexBytes(f, m), false)
	}
	empty, _ := New(Config{Dim: 2, Lists: 3, Metric: L2})
	var buf bytes.Buffer
	empty.WriteTo(&buf)
	f.Add(buf.Bytes(), false)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix {
			// Reach the structural checks behind the checksums.
			data = slices.Clone(data)
			fixChecksums(data)
		}
		x, err := Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not marked corrupt: %v", err)
			}
			return
		}
		// Whatever loads is a working index.
		q := make([]float32, x.Config().Dim)
		q[0] = 1
		if _, err := x.Search(q, 5, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Search(q, 5, 1, func(id uint64) bool { return id%2 == 0 }, nil); err != nil {
			t.Fatal(err)
		}
		if err := x.Add(1<<63, q); err != nil && !errors.Is(err, ErrDuplicateID) {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := x.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
	})
}

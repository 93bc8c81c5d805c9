package hnsw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"
	"time"
)

func TestWriteReadRoundTrip(t *testing.T) {
	n, dim := 5000, 48
	if raceEnabled {
		n = 1000
	}
	vecs := clustered(n, dim, 30, 31)
	ids := seqIDs(n, 1<<40)
	queries := perturb(clustered(50, dim, 30, 31), 32)
	for _, m := range metrics {
		t.Run(m.String(), func(t *testing.T) {
			x := build(t, Config{Dim: dim, M: 12, EfConstruction: 40, Metric: m, Seed: 5}, ids, vecs, 0)
			for i := 0; i < n; i += 7 {
				x.Delete(ids[i])
			}
			if vecBytes := int64(n * dim * 4); x.Size() < vecBytes {
				t.Fatalf("Size = %d, below the %d bytes of vectors", x.Size(), vecBytes)
			}
			var buf bytes.Buffer
			wrote, err := x.WriteTo(&buf)
			if err != nil || wrote != int64(buf.Len()) {
				t.Fatalf("WriteTo = %d, %v; buffer holds %d", wrote, err, buf.Len())
			}
			data := slices.Clone(buf.Bytes())
			buf.WriteString("trailing bytes are left unread")
			y, err := Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != "trailing bytes are left unread" {
				t.Fatalf("Read consumed past the index: %q left", buf.String())
			}
			if y.Config() != x.Config() || y.Len() != x.Len() || y.Deleted() != x.Deleted() {
				t.Fatalf("loaded %+v len %d del %d, want %+v len %d del %d",
					y.Config(), y.Len(), y.Deleted(), x.Config(), x.Len(), x.Deleted())
			}
			keep := func(id uint64) bool { return id%3 == 0 }
			for i := range len(queries) / dim {
				q := queries[i*dim : (i+1)*dim]
				for _, f := range []func(uint64) bool{nil, keep} {
					a, _ := x.Search(q, 10, 50, f, nil)
					b, _ := y.Search(q, 10, 50, f, nil)
					if !slices.Equal(a, b) {
						t.Fatalf("query %d: loaded index gives %v, built one %v", i, b, a)
					}
				}
			}
			// Writing the loaded index gives the same bytes.
			var again bytes.Buffer
			if _, err := y.WriteTo(&again); err != nil || !bytes.Equal(again.Bytes(), data) {
				t.Fatalf("rewrite differs (%v)", err)
			}
			// A loaded index takes new rows.
			if err := y.Add(1, vecs[:dim]); err != nil {
				t.Fatal(err)
			}
			if got, _ := y.Search(vecs[:dim], 1, 0, func(id uint64) bool { return id == 1 }, nil); len(got) != 1 {
				t.Fatalf("row added after loading not found: %v", got)
			}
			if err := y.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadEmpty(t *testing.T) {
	x, _ := New(Config{Dim: 4, Metric: L2})
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if y.Len() != 0 {
		t.Fatal("empty index loaded with rows")
	}
	if err := y.Add(3, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
}

// smallIndexBytes is a stored index small enough to corrupt byte by byte.
func smallIndexBytes(t testing.TB, m Metric) []byte {
	n, dim := 60, 3
	vecs := clustered(n, dim, 4, 41)
	x, err := New(Config{Dim: dim, M: 2, EfConstruction: 4, Metric: m, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.AddBatch(seqIDs(n, 10), vecs, 1); err != nil {
		t.Fatal(err)
	}
	x.Delete(12)
	var buf bytes.Buffer
	if _, err := x.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Every single-byte change and every truncation is caught by a checksum.
func TestReadCorrupt(t *testing.T) {
	data := smallIndexBytes(t, L2)
	if _, err := Read(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0x10
		if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: err = %v", i, err)
		}
	}
	for i := range len(data) {
		if _, err := Read(bytes.NewReader(data[:i])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v", i, err)
		}
	}
}

// Structural damage behind valid checksums is caught by the invariant
// checks: the corrupted bytes get fresh checksums before Read sees them.
func TestReadCorruptStructure(t *testing.T) {
	data := smallIndexBytes(t, L2)
	n, dim := 60, 3
	idsAt := headerSize
	levelsAt := idsAt + 8*n
	statesAt := levelsAt + n
	vecsAt := statesAt + n
	links0At := vecsAt + 4*n*dim
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"neighbour out of range", func(b []byte) { binary.LittleEndian.PutUint32(b[links0At+4:], 1000) }},
		{"too many neighbours", func(b []byte) { binary.LittleEndian.PutUint32(b[links0At:], 5) }},
		{"self link", func(b []byte) { binary.LittleEndian.PutUint32(b[links0At+4:], 0) }},
		{"duplicate live id", func(b []byte) { copy(b[idsAt+8:idsAt+16], b[idsAt+16*8:idsAt+17*8]) }},
		{"bad state", func(b []byte) { b[statesAt+5] = 7 }},
		{"NaN vector", func(b []byte) { binary.LittleEndian.PutUint32(b[vecsAt+8:], 0x7fc00000) }},
		{"level above top", func(b []byte) { b[levelsAt+3] = 31 }},
		{"entry out of range", func(b []byte) { binary.LittleEndian.PutUint64(b[52:], 60) }},
		{"too many nodes", func(b []byte) { binary.LittleEndian.PutUint64(b[36:], 1<<40) }},
		{"ef_construction below 2m", func(b []byte) { binary.LittleEndian.PutUint32(b[20:], 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(data)
			tc.edit(bad)
			fixChecksums(bad)
			if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// fixChecksums rewrites both checksums of a stored index to match its bytes.
func fixChecksums(b []byte) {
	if len(b) < headerSize+4 {
		return
	}
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], castagnoli))
	body := b[headerSize : len(b)-4]
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
}

func FuzzRead(f *testing.F) {
	for _, m := range metrics {
		f.Add(smallIndexBytes(f, m), false)
	}
	empty, _ := New(Config{Dim: 2, Metric: L2})
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
		if _, err := x.Search(q, 5, 10, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Search(q, 5, 10, func(id uint64) bool { return id%2 == 0 }, nil); err != nil {
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

// Loading is a copy of the arenas, far cheaper than building.
func TestReadFasterThanBuild(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("timing")
	}
	n, dim := 10000, 64
	vecs := clustered(n, dim, 50, 51)
	start := time.Now()
	x := build(t, Config{Dim: dim, Metric: L2}, seqIDs(n, 0), vecs, 1)
	buildTime := time.Since(start)
	var buf bytes.Buffer
	x.WriteTo(&buf)
	start = time.Now()
	if _, err := Read(&buf); err != nil {
		t.Fatal(err)
	}
	loadTime := time.Since(start)
	t.Logf("build %v, load %v (%.0fx)", buildTime, loadTime, float64(buildTime)/float64(loadTime))
	if loadTime*20 > buildTime {
		t.Fatalf("load %v is not 20x faster than build %v", loadTime, buildTime)
	}
}

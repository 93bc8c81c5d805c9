package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"unsafe"
)

// The files of a data set, in the directory given to gen. All are flat
// little-endian arrays without a header, so that the Node anchors read them
// with one readFileSync into a Float32Array or Int32Array.
const (
	fileVectors    = "vectors.f32"    // rows × dim float32
	fileCategories = "categories.i32" // rows int32 in 0..categories-1
	fileQueries    = "queries.f32"    // queries × dim float32
	fileQueryCats  = "query_cats.i32" // queries int32: the filter value of each query
	fileTruth      = "truth.i32"      // queries × k int32: exact nearest ids
	fileTruthCat   = "truth_cat.i32"  // queries × k int32: exact nearest ids within the query's category
	fileMeta       = "meta.json"      // the dataSpec
	noID           = int32(-1)        // pads a truth row with fewer than k ids
	categoryCount  = 100              // 1% selectivity for a filter on one value
	truthK         = 10               // the k of recall@k
)

// dataSpec describes a generated data set; it is written as meta.json.
type dataSpec struct {
	Rows       int     `json:"rows"`
	Dim        int     `json:"dim"`
	Queries    int     `json:"queries"`
	Clusters   int     `json:"clusters"`
	Categories int     `json:"categories"`
	K          int     `json:"k"`
	Seed       uint64  `json:"seed"`
	Spread     float64 `json:"spread"`      // standard deviation of a point around its centre
	QueryNoise float64 `json:"query_noise"` // standard deviation of a query around its data point
}

// dataSet is a data set in memory. Row i has id i.
type dataSet struct {
	dataSpec
	vectors    []float32
	categories []int32
	queries    []float32
	queryCats  []int32
}

func (d *dataSet) vector(i int) []float32 { return d.vectors[i*d.Dim : (i+1)*d.Dim] }
func (d *dataSet) query(i int) []float32  { return d.queries[i*d.Dim : (i+1)*d.Dim] }

// generate makes the data set of spec, the same for the same spec: Clusters
// gaussian clusters whose centres are drawn from N(0, 1) in every
// coordinate and whose points lie at N(0, Spread²) around their centre; each
// row belongs to a uniformly drawn cluster and has a uniformly drawn
// category, independent of its cluster. A query is a uniformly drawn data
// point plus N(0, QueryNoise²) noise, so it lies near the data but is not a
// row itself; its filter value is a uniformly drawn category.
func generate(spec dataSpec) *dataSet {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x616e6e))
	dim := spec.Dim
	centres := make([]float32, spec.Clusters*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64())
	}
	d := &dataSet{
		dataSpec:   spec,
		vectors:    make([]float32, spec.Rows*dim),
		categories: make([]int32, spec.Rows),
		queries:    make([]float32, spec.Queries*dim),
		queryCats:  make([]int32, spec.Queries),
	}
	for i := range spec.Rows {
		c := rng.IntN(spec.Clusters)
		centre, v := centres[c*dim:(c+1)*dim], d.vector(i)
		for j := range v {
			v[j] = centre[j] + float32(spec.Spread*rng.NormFloat64())
		}
		d.categories[i] = int32(rng.IntN(spec.Categories))
	}
	for i := range spec.Queries {
		src, q := d.vector(rng.IntN(spec.Rows)), d.query(i)
		for j := range q {
			q[j] = src[j] + float32(spec.QueryNoise*rng.NormFloat64())
		}
		d.queryCats[i] = int32(rng.IntN(spec.Categories))
	}
	return d
}

// write stores the data set in dir.
func (d *dataSet) write(dir string) error {
	meta, err := json.MarshalIndent(d.dataSpec, "", "  ")
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{
		fileVectors:    f32Bytes(d.vectors),
		fileCategories: i32Bytes(d.categories),
		fileQueries:    f32Bytes(d.queries),
		fileQueryCats:  i32Bytes(d.queryCats),
		fileMeta:       meta,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readDataSet loads the data set that write stored in dir.
func readDataSet(dir string) (*dataSet, error) {
	d := &dataSet{}
	meta, err := os.ReadFile(filepath.Join(dir, fileMeta))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(meta, &d.dataSpec); err != nil {
		return nil, fmt.Errorf("%s: %w", fileMeta, err)
	}
	if d.vectors, err = readF32(filepath.Join(dir, fileVectors), d.Rows*d.Dim); err != nil {
		return nil, err
	}
	if d.queries, err = readF32(filepath.Join(dir, fileQueries), d.Queries*d.Dim); err != nil {
		return nil, err
	}
	if d.categories, err = readI32(filepath.Join(dir, fileCategories), d.Rows); err != nil {
		return nil, err
	}
	if d.queryCats, err = readI32(filepath.Join(dir, fileQueryCats), d.Queries); err != nil {
		return nil, err
	}
	return d, nil
}

// NB: the files are little-endian; these views assume a little-endian host
// (amd64, arm64), which isLittleEndian checks at start.

func f32Bytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func i32Bytes(v []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func readF32(path string, n int) ([]float32, error) {
	b, err := readExact(path, 4*n)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func readI32(path string, n int) ([]int32, error) {
	b, err := readExact(path, 4*n)
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func readExact(path string, size int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != size {
		return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(b), size)
	}
	return b, nil
}

func isLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

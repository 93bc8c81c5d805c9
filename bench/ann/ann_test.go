package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestTopK(t *testing.T) {
	f := func(dist []float32, want []int32) {
		t.Helper()
		top := newTopK(3)
		for i, d := range dist {
			top.push(d, int32(i))
		}
		if !slices.Equal(top.ids, want) {
			t.Errorf("top 3 of %v = %v, want %v", dist, top.ids, want)
		}
	}
	f(nil, []int32{})
	f([]float32{5}, []int32{0})
	f([]float32{5, 1, 4, 2, 3}, []int32{1, 3, 4})
	f([]float32{1, 1, 1, 1}, []int32{0, 1, 2}) // ties go to the smaller id
	f([]float32{3, 2, 1, 0}, []int32{3, 2, 1})
}

func TestRecall(t *testing.T) {
	f := func(truth, got []int32, found, want int) {
		t.Helper()
		if f, w := recall(truth, got); f != found || w != want {
			t.Errorf("recall(%v, %v) = %d/%d, want %d/%d", truth, got, f, w, found, want)
		}
	}
	f([]int32{1, 2, 3}, []int32{3, 2, 1}, 3, 3)
	f([]int32{1, 2, 3}, []int32{4, 2}, 1, 3)
	f([]int32{1, noID, noID}, []int32{1, 5, 6}, 1, 1)
	f([]int32{1, 2}, nil, 0, 2)
}

func smallSpec() dataSpec {
	return dataSpec{Rows: 2000, Dim: 16, Queries: 20, Clusters: 10, Categories: categoryCount, K: truthK,
		Seed: 7, Spread: 0.5, QueryNoise: 0.5}
}

// TestGenerateDeterministic checks that a spec gives the same data every
// time: the anchors and the server are compared on the same vectors.
func TestGenerateDeterministic(t *testing.T) {
	a, b := generate(smallSpec()), generate(smallSpec())
	if !slices.Equal(a.vectors, b.vectors) || !slices.Equal(a.queries, b.queries) ||
		!slices.Equal(a.categories, b.categories) || !slices.Equal(a.queryCats, b.queryCats) {
		t.Fatal("two generations of one spec differ")
	}
}

// TestGroundTruth checks the parallel brute force against a sort of all
// distances, for the unfiltered and the filtered truth.
func TestGroundTruth(t *testing.T) {
	d := generate(smallSpec())
	truth, truthCat := groundTruth(d)
	for qi := range d.Queries {
		q := d.query(qi)
		type cand struct {
			d  float32
			id int32
		}
		var all, cat []cand
		for i := range d.Rows {
			var s float32
			for j, x := range d.vector(i) {
				s += (x - q[j]) * (x - q[j])
			}
			all = append(all, cand{s, int32(i)})
			if d.categories[i] == d.queryCats[qi] {
				cat = append(cat, cand{s, int32(i)})
			}
		}
		order := func(a, b cand) int {
			if less(a.d, a.id, b.d, b.id) {
				return -1
			}
			return 1
		}
		slices.SortFunc(all, order)
		slices.SortFunc(cat, order)
		for j := range d.K {
			if got := truth[qi*d.K+j]; got != all[j].id {
				t.Fatalf("query %d: truth[%d] = %d, want %d", qi, j, got, all[j].id)
			}
			want := noID
			if j < len(cat) {
				want = cat[j].id
			}
			if got := truthCat[qi*d.K+j]; got != want {
				t.Fatalf("query %d: filtered truth[%d] = %d, want %d", qi, j, got, want)
			}
		}
	}
}

func TestDataSetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	d := generate(smallSpec())
	if err := d.write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := readDataSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.dataSpec != d.dataSpec || !slices.Equal(got.vectors, d.vectors) || !slices.Equal(got.queryCats, d.queryCats) {
		t.Fatal("data set changed on the way through the files")
	}
}

// TestCopyStream checks the binary COPY stream's framing: the header, one
// tuple of 3 fields per row with pgvector's binary vector, the trailer.
func TestCopyStream(t *testing.T) {
	spec := smallSpec()
	spec.Rows = 3
	b := &serverBench{d: generate(spec)}
	var buf bytes.Buffer
	if err := b.writeCopy(&buf); err != nil {
		t.Fatal(err)
	}
	tuple := 2 + (4 + 4) + (4 + 4) + (4 + 4 + 4*spec.Dim)
	if want := 19 + spec.Rows*tuple + 2; buf.Len() != want {
		t.Fatalf("stream of %d bytes, want %d", buf.Len(), want)
	}
	if !strings.HasPrefix(buf.String(), "PGCOPY\n\xff\r\n\x00") || !bytes.HasSuffix(buf.Bytes(), []byte{0xff, 0xff}) {
		t.Fatal("bad header or trailer")
	}
}

func TestVectorText(t *testing.T) {
	if got := vectorText([]float32{1, -0.5, 3.25}); got != "[1,-0.5,3.25]" {
		t.Errorf("vectorText = %q", got)
	}
}

// TestReport checks that the tables take the lines of both sides and show
// an unavailable index as such.
func TestReport(t *testing.T) {
	in := `not json
{"system":"deeplaked","phase":"build","name":"deeplaked HNSW index","rows":10,"params":"m=16","unavailable":true,"sqlstate":"0A000","error":"CREATE INDEX is not supported yet"}
{"system":"deeplaked","phase":"search","name":"deeplaked exact","search":"exact","clients":1,"queries":5,"recall_at_10":1,"qps":12.5,"p50_ms":80,"p99_ms":90,"plan":"Limit / Vector Search on items / Method: exact scan / Filter: (category = 1)"}
{"system":"hnswlib-node","phase":"search","search":"index","ef":40,"clients":1,"recall_at_10":0.987,"qps":3414,"p50_ms":0.11,"p99_ms":4.31,"plan":"hnswlib-node, one thread"}
`
	var out bytes.Buffer
	if err := report(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| deeplaked | deeplaked HNSW index | m=16 | 10 | unavailable |  | 0A000 CREATE INDEX is not supported yet |",
		"| deeplaked | exact |  |  | 1 | 1.000 | 12 | 80.00 | 90.00 | exact scan |",
		"| hnswlib-node | index |  | 40 | 1 | 0.987 | 3414 | 0.11 | 4.31 | hnswlib-node, one thread |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in\n%s", want, out.String())
		}
	}
}

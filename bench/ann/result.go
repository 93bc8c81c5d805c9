package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// result is one measurement, printed as one JSON line. The Node anchors
// (anchors/*.mjs) print the same fields.
type result struct {
	System string `json:"system"` // deeplaked, hnswlib-node, lancedb, data
	Phase  string `json:"phase"`  // gen, load, build, search
	Name   string `json:"name"`
	Rows   int    `json:"rows,omitempty"`

	// Search phase.
	Search  string   `json:"search,omitempty"` // exact or index
	Filter  string   `json:"filter,omitempty"` // empty, or the filter and its selectivity
	EF      int      `json:"ef,omitempty"`
	Clients int      `json:"clients,omitempty"`
	Queries int      `json:"queries,omitempty"`
	Recall  *float64 `json:"recall_at_10,omitempty"`
	QPS     float64  `json:"qps,omitempty"`
	P50ms   float64  `json:"p50_ms,omitempty"`
	P99ms   float64  `json:"p99_ms,omitempty"`
	Plan    string   `json:"plan,omitempty"` // what EXPLAIN says the server does

	// Gen, load and build phases.
	Seconds   float64 `json:"seconds,omitempty"`
	SizeBytes int64   `json:"size_bytes,omitempty"`
	SizeNote  string  `json:"size_note,omitempty"` // where SizeBytes comes from
	Params    string  `json:"params,omitempty"`

	// Unavailable is set, with the SQLSTATE and message, when a step could
	// not run; the rest of the run goes on without it.
	Unavailable bool   `json:"unavailable,omitempty"`
	SQLState    string `json:"sqlstate,omitempty"`
	Error       string `json:"error,omitempty"`
	Note        string `json:"note,omitempty"`
}

func (r result) print() {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false) // keep <-> readable in plans
	if err := enc.Encode(r); err != nil {
		panic(err)
	}
}

// timing sums up the latencies of one pass over the queries that took wall
// in all.
func timing(r *result, lat []time.Duration, wall time.Duration) {
	r.Queries = len(lat)
	r.QPS = float64(len(lat)) / wall.Seconds()
	s := slices.Clone(lat)
	slices.Sort(s)
	ms := func(p float64) float64 {
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	r.P50ms, r.P99ms = ms(0.50), ms(0.99)
}

// scoreRecall sets r.Recall to recall@k of got (one id list per query)
// against truth (queries × k, noID-padded).
func scoreRecall(r *result, truth []int32, k int, got [][]int32) {
	found, want := 0, 0
	for i, ids := range got {
		f, w := recall(truth[i*k:(i+1)*k], ids)
		found += f
		want += w
	}
	if want > 0 {
		x := float64(found) / float64(want)
		r.Recall = &x
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+"  "+format+"\n", args...)
}

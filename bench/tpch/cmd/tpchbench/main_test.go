package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRatio(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		a, b result
		want string
	}{
		{result{d: 2 * s}, result{d: s}, "2.00×"},
		{result{d: 30 * s}, result{d: s}, "30.0×"},
		{result{d: 300 * s}, result{d: s}, "300×"},
		{result{d: 60 * s, timedOut: true}, result{d: 2 * s}, ">30.0×"},
		{result{d: 2 * s}, result{d: 60 * s, timedOut: true}, "<0.03×"},
		{result{d: 60 * s, timedOut: true}, result{d: 60 * s, timedOut: true}, "—"},
		{result{failed: "x"}, result{d: s}, "—"},
	} {
		if got := ratio(c.a, c.b); got != c.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
	if got := seconds(result{d: 60 * s, timedOut: true}); got != ">60s" {
		t.Errorf("seconds of a timeout = %q", got)
	}
	if got := seconds(result{d: 1500 * time.Microsecond}); got != "0.0015" {
		t.Errorf("seconds = %q", got)
	}
}

func TestReport(t *testing.T) {
	js := `{"engine":"duckdb","version":"v1.5.6","load_seconds":2.5,"runs":3,"timeout_seconds":60,"queries":[`
	for q := 1; q <= 22; q++ {
		if q > 1 {
			js += ","
		}
		switch q {
		case 17:
			js += `{"query":17,"seconds":null,"runs":[],"rows":null,"timeout":true}`
		case 2:
			js += `{"query":2,"seconds":0.01,"runs":[0.01],"rows":99,"timeout":false}`
		default:
			js += fmt.Sprintf(`{"query":%d,"seconds":0.01,"runs":[0.01],"rows":1,"timeout":false}`, q)
		}
	}
	js += `]}`
	path := filepath.Join(t.TempDir(), "duckdb.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	duck, err := readDuckDB(path)
	if err != nil {
		t.Fatal(err)
	}
	dl := &engine{name: "deeplaked", load: 10 * time.Second}
	pg := &engine{name: "PostgreSQL", load: 20 * time.Second}
	for q := 1; q <= 22; q++ {
		dl.q[q] = result{d: time.Second, rows: 1}
		pg.q[q] = result{d: 4 * time.Second, rows: 1}
	}
	dl.q[9] = result{d: 60 * time.Second, timedOut: true, rows: -1}
	var b strings.Builder
	report(&b, []*engine{dl, pg, duck}, 60*time.Second, 3, "test machine")
	out := b.String()
	for _, want := range []string{
		"| query | deeplaked s | PostgreSQL s | DuckDB s | speedup vs PG (PG/deeplaked) | deeplaked/DuckDB |",
		"| 9 | >60s | 4.00 | 0.0100 | <0.07× | >6000× |",
		"| 17 | 1.00 | 4.00 | >60s | 4.00× | <0.02× |",
		"| sum | >81s | 88.0 | >60.2s | <1.09× | — |",
		"| load | 10.0 | 20.0 | 2.50 | 2.00× | 4.00× |",
		"every query ≥3× faster than PostgreSQL: 21 of 22 are",
		"no answer within the timeout: 9 (deeplaked); 17 (DuckDB)",
		"warning: query 2 returns different row counts: deeplaked 1, PostgreSQL 1, DuckDB 99",
		"Machine: test machine.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Package gen generates the TPC-H database (specification 3.x, clause 4.2
// "Database population") at any scale factor, as one file a table of rows
// with fields separated by '|': the format PostgreSQL loads with
//
//	COPY <table> FROM '<file>' WITH (FORMAT csv, DELIMITER '|')
//
// The data follow the specification's cardinalities, value domains,
// distributions and formulas; the text pool is made by the
// specification's grammar. The output is deterministic: for a given scale
// factor it is the same bytes on every platform and with any number of
// workers. It is not byte-identical to dbgen's.
//
// No field holds '|', '"', a backslash or a line break, so no field needs
// quoting.
package gen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Tables are the eight tables, in the order they are generated.
var Tables = []string{"region", "nation", "supplier", "part", "partsupp", "customer", "orders", "lineitem"}

// Options tune a generation.
type Options struct {
	// Workers is the number of goroutines making rows; 0 means
	// GOMAXPROCS. It does not change the output.
	Workers int
	// Tables are the tables to write; none means all. PART and PARTSUPP
	// are made together, as are ORDERS and LINEITEM.
	Tables []string
}

// A Count is the number of rows written to a table.
type Count struct {
	Table string
	Rows  int64
}

// MinScale is the smallest scale factor: 100 suppliers, the fewest for
// which the four suppliers PS_SUPPKEY gives a part are distinct.
const MinScale = 0.01

// Rows returns the cardinality of a table at scale factor sf (clause
// 4.2.5): exact for every table but LINEITEM, whose count is random and
// for which Rows returns the mean, 4 lines an order.
func Rows(sf float64, table string) int64 {
	scaled := func(n float64) int64 { return int64(math.Round(n * sf)) }
	switch table {
	case "region":
		return int64(len(regions))
	case "nation":
		return int64(len(nations))
	case "supplier":
		return scaled(10_000)
	case "part":
		return scaled(200_000)
	case "partsupp":
		return 4 * scaled(200_000)
	case "customer":
		return scaled(150_000)
	case "orders":
		return scaled(1_500_000)
	case "lineitem":
		return 4 * scaled(1_500_000)
	}
	return 0
}

// A generator holds what the chunks of a scale factor share.
type generator struct {
	suppliers, parts, customers, orders, clerks int64
	// press maps the suppliers whose comment holds "Customer ...
	// Complaints" or "Customer ... Recommends" to the second word.
	press map[int64]string
}

func newGenerator(sf float64) (*generator, error) {
	if math.IsNaN(sf) || sf < MinScale || sf > 100_000 {
		return nil, fmt.Errorf("tpch: scale factor %v: want one from %v to 100000", sf, MinScale)
	}
	g := &generator{
		suppliers: Rows(sf, "supplier"),
		parts:     Rows(sf, "part"),
		customers: Rows(sf, "customer"),
		orders:    Rows(sf, "orders"),
		clerks:    max(1, int64(math.Round(1000*sf))),
		press:     map[int64]string{},
	}
	// SF × 5 suppliers of each kind (at least one of each, so that query
	// 16's filter has something to remove at small scale factors), drawn
	// without replacement.
	per := max(1, int64(math.Round(5*sf)))
	var s stream
	s.seed(tableSupplier, sPress, -1)
	for n := int64(0); n < 2*per; {
		key := s.between(1, g.suppliers)
		if _, dup := g.press[key]; dup {
			continue
		}
		g.press[key] = "Complaints"
		if n >= per {
			g.press[key] = "Recommends"
		}
		n++
	}
	return g, nil
}

// A group is tables made together, with the number of chunks of rows
// they are cut into and the function that makes a chunk.
type group struct {
	tables []string
	chunks int64
	make   func(k int64, c *chunk)
}

func (g *generator) groups() []group {
	nchunks := func(rows int64) int64 { return (rows + chunkRows - 1) / chunkRows }
	return []group{
		{[]string{"region"}, 1, func(_ int64, c *chunk) { g.region(c) }},
		{[]string{"nation"}, 1, func(_ int64, c *chunk) { g.nation(c) }},
		{[]string{"supplier"}, nchunks(g.suppliers), g.supplier},
		{[]string{"part", "partsupp"}, nchunks(g.parts), g.part},
		{[]string{"customer"}, nchunks(g.customers), g.customer},
		{[]string{"orders", "lineitem"}, nchunks(g.orders), g.order},
	}
}

// Write generates the tables of scale factor sf, writing each to the
// writer open returns for it; a table not in opt.Tables is not opened.
func Write(sf float64, open func(table string) (io.Writer, error), opt Options) ([]Count, error) {
	g, err := newGenerator(sf)
	if err != nil {
		return nil, err
	}
	for _, t := range opt.Tables {
		if !slices.Contains(Tables, t) {
			return nil, fmt.Errorf("tpch: no table %q", t)
		}
	}
	want := func(t string) bool { return len(opt.Tables) == 0 || slices.Contains(opt.Tables, t) }
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var counts []Count
	for _, gr := range g.groups() {
		if !slices.ContainsFunc(gr.tables, want) {
			continue
		}
		ws := make([]io.Writer, len(gr.tables))
		for i, t := range gr.tables {
			ws[i] = io.Discard
			if want(t) {
				if ws[i], err = open(t); err != nil {
					return counts, err
				}
			}
		}
		rows, err := run(gr, ws, workers)
		if err != nil {
			return counts, err
		}
		for i, t := range gr.tables {
			if want(t) {
				counts = append(counts, Count{t, rows[i]})
			}
		}
	}
	return counts, nil
}

// Generate writes the tables of scale factor sf to dir (made if need be)
// as <table>.tbl.
func Generate(dir string, sf float64, opt Options) ([]Count, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	type file struct {
		f *os.File
		w *bufio.Writer
	}
	var files []file
	closeAll := func() error {
		var first error
		for _, f := range files {
			if err := f.w.Flush(); err != nil && first == nil {
				first = err
			}
			if err := f.f.Close(); err != nil && first == nil {
				first = err
			}
		}
		files = nil
		return first
	}
	open := func(table string) (io.Writer, error) {
		f, err := os.Create(filepath.Join(dir, table+".tbl"))
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		files = append(files, file{f, w})
		return w, nil
	}
	counts, err := Write(sf, open, opt)
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	return counts, err
}

// run makes the chunks of a group with workers goroutines and writes them
// in order. At most 2×workers chunks are held at once, so memory stays
// bounded whatever the table's size.
func run(gr group, ws []io.Writer, workers int) ([]int64, error) {
	window := 2 * workers
	type slot struct {
		c    *chunk
		k    int64
		done chan struct{}
	}
	free := make(chan *chunk, window)
	for range window {
		free <- &chunk{}
	}
	order := make(chan slot, window)
	jobs := make(chan slot, window)
	var stop atomic.Bool
	go func() {
		defer close(jobs)
		defer close(order)
		for k := int64(0); k < gr.chunks && !stop.Load(); k++ {
			s := slot{<-free, k, make(chan struct{})}
			order <- s
			jobs <- s
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for s := range jobs {
				s.c.reset()
				if !stop.Load() {
					gr.make(s.k, s.c)
				}
				close(s.done)
			}
		})
	}
	rows := make([]int64, len(gr.tables))
	var err error
	for s := range order {
		<-s.done
		for i, w := range ws {
			if err != nil {
				break
			}
			rows[i] += s.c.rows[i]
			if _, err = w.Write(s.c.bufs[i]); err != nil {
				stop.Store(true)
			}
		}
		free <- s.c
	}
	wg.Wait()
	return rows, err
}

// Command ann is the vector-search benchmark's Go side (see README.md):
//
//	ann gen -dir D -rows N -queries Q   # the data set and its exact top-k, as flat files in D
//	ann server -dir D -dsn DSN          # load a server, time exact and HNSW search
//	ann table results.jsonl             # the Markdown tables of a run
//
// Each measurement is printed as one JSON line on stdout; progress goes to
// stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ann gen|server|table ...")
		os.Exit(2)
	}
	if !isLittleEndian() {
		fmt.Fprintln(os.Stderr, "ann: the data files are little-endian views: a little-endian host is needed")
		os.Exit(1)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "gen":
		err = cmdGen(args)
	case "server":
		err = cmdServer(args)
	case "table":
		if len(args) != 1 {
			err = fmt.Errorf("usage: ann table results.jsonl")
		} else {
			err = reportFile(args[0])
		}
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ann:", err)
		os.Exit(1)
	}
}

func cmdGen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fs.String("dir", "", "directory of the data files")
	spec := dataSpec{Categories: categoryCount, K: truthK}
	fs.IntVar(&spec.Rows, "rows", 1_000_000, "rows")
	fs.IntVar(&spec.Queries, "queries", 1000, "queries")
	fs.IntVar(&spec.Dim, "dim", 128, "dimensions")
	fs.IntVar(&spec.Clusters, "clusters", 1000, "gaussian clusters")
	fs.Uint64Var(&spec.Seed, "seed", 1, "random seed")
	fs.Float64Var(&spec.Spread, "spread", 0.5, "standard deviation of a point around its cluster's centre (centres are N(0,1))")
	fs.Float64Var(&spec.QueryNoise, "noise", 0.5, "standard deviation of a query around the data point it is drawn from")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("gen: -dir is required")
	}
	t0 := time.Now()
	d := generate(spec)
	if err := d.write(*dir); err != nil {
		return err
	}
	genS := time.Since(t0).Seconds()
	logf("generated %d × %d vectors and %d queries in %.1f s; exact top-%d", spec.Rows, spec.Dim, spec.Queries, genS, spec.K)
	t1 := time.Now()
	truth, truthCat := groundTruth(d)
	if err := writeTruth(*dir, truth, truthCat); err != nil {
		return err
	}
	result{System: "data", Phase: "gen", Name: "generate", Rows: spec.Rows, Seconds: genS,
		SizeBytes: int64(4 * len(d.vectors)), SizeNote: "raw float32 vectors",
		Params: fmt.Sprintf("%d clusters, spread %g, query noise %g, seed %d", spec.Clusters, spec.Spread, spec.QueryNoise, spec.Seed)}.print()
	result{System: "data", Phase: "gen", Name: "exact top-10 by brute force (all cores)", Rows: spec.Rows,
		Seconds: time.Since(t1).Seconds(), Params: fmt.Sprintf("%d queries, unfiltered and 1%% filter", spec.Queries)}.print()
	return nil
}

func cmdServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	dir := fs.String("dir", "", "directory of the data files (ann gen)")
	b := &serverBench{}
	fs.StringVar(&b.dsn, "dsn", "", "server to load and query")
	fs.StringVar(&b.dataDir, "data-dir", "", "the server's data directory, to report its size (optional)")
	fs.IntVar(&b.clients, "clients", 8, "concurrent clients of the concurrent passes")
	fs.IntVar(&b.exactN, "exact-queries", 0, "queries of the exact passes (0: all)")
	fs.IntVar(&b.serverPID, "server-pid", 0, "the server's process id, to report its memory (optional)")
	fs.StringVar(&b.indexSQL, "index-sql", sqlIndex, "the CREATE INDEX statement timed")
	efList := fs.String("ef", "40,100,200", "hnsw.ef_search values")
	fs.BoolVar(&b.searchOnly, "search-only", false, "skip the load, the exact passes and the build: search a table an earlier run left (to profile the server)")
	fs.Parse(args)
	if *dir == "" || b.dsn == "" {
		return fmt.Errorf("server: -dir and -dsn are required")
	}
	for _, s := range strings.Split(*efList, ",") {
		ef, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-ef: %w", err)
		}
		b.efs = append(b.efs, ef)
	}
	var err error
	if b.d, err = readDataSet(*dir); err != nil {
		return err
	}
	if b.truth, b.truthCat, err = readTruth(b.d, *dir); err != nil {
		return err
	}
	if b.exactN <= 0 || b.exactN > b.d.Queries {
		b.exactN = b.d.Queries
	}
	return b.run(context.Background())
}

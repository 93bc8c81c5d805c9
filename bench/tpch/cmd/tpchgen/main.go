// Command tpchgen writes the TPC-H tables at a scale factor as
// <table>.tbl files of '|'-separated fields, loadable by PostgreSQL with
// COPY <table> FROM '<file>' WITH (FORMAT csv, DELIMITER '|').
//
//	go run ./bench/tpch/cmd/tpchgen -sf 1 -out /tmp/tpch-sf1
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/deeplaked/deeplaked/bench/tpch/gen"
)

func main() {
	sf := flag.Float64("sf", 1, "scale factor (0.01, 0.1, 1, 10, ...)")
	out := flag.String("out", "", "directory for the <table>.tbl files (made if need be)")
	tables := flag.String("tables", "", "comma-separated tables to write (default all)")
	workers := flag.Int("workers", 0, "goroutines making rows (default GOMAXPROCS); the output does not depend on it")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: tpchgen -sf SF -out DIR [-tables t1,t2] [-workers N]")
		os.Exit(2)
	}
	opt := gen.Options{Workers: *workers}
	if *tables != "" {
		opt.Tables = strings.Split(*tables, ",")
	}
	start := time.Now()
	counts, err := gen.Generate(*out, *sf, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpchgen:", err)
		os.Exit(1)
	}
	for _, c := range counts {
		fmt.Printf("%-9s %12d rows\n", c.Table, c.Rows)
	}
	fmt.Printf("scale factor %g in %s: %s\n", *sf, time.Since(start).Round(time.Millisecond), *out)
}

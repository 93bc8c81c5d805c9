// Command protocol benchmarks the PostgreSQL protocol path of deeplaked
// against PostgreSQL 15 in the same run, with pgx as the client: prepared
// point queries (extended protocol, one connection and eight), the same
// over the simple protocol, pipelined parameterized INSERTs, and a full
// read of an embedding column in binary and in text. run.sh builds
// deeplaked, starts it and a throwaway PostgreSQL 15 cluster and runs it:
//
//	protocol -dl DSN -pg DSN -rows N -queries Q
//
// README.md has the figures and how to read them.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const dim = 128

var (
	dlDSN   = flag.String("dl", "", "deeplaked connection string")
	pgDSN   = flag.String("pg", "", "PostgreSQL connection string")
	rows    = flag.Int("rows", 100000, "rows of the table")
	queries = flag.Int("queries", 20000, "point queries per measurement")
	machine = flag.String("machine", "", "machine description for the report")
)

// server is one system under test.
type server struct {
	name string
	dsn  string
	// embType is how the embedding column is declared: a tensor in
	// deeplaked, real[] in PostgreSQL; both go out as real[] (OID 1021).
	embType string
}

// result is one measurement of both servers.
type result struct {
	name, unit string
	dl, pg     float64
}

func main() {
	flag.Parse()
	ctx := context.Background()
	servers := []server{{"deeplaked", *dlDSN, "float32[" + strconv.Itoa(dim) + "]"}, {"PostgreSQL 15", *pgDSN, "real[]"}}
	var results []result
	measure := func(name, unit string, fn func(s server) (float64, error)) {
		r := result{name: name, unit: unit}
		for i, s := range servers {
			v, err := fn(s)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s on %s: %v\n", name, s.name, err)
				os.Exit(1)
			}
			if i == 0 {
				r.dl = v
			} else {
				r.pg = v
			}
			fmt.Fprintf(os.Stderr, "%-40s %-14s %12.0f %s\n", name, s.name, v, unit)
		}
		results = append(results, r)
	}
	for _, s := range servers {
		if err := load(ctx, s); err != nil {
			fmt.Fprintf(os.Stderr, "loading %s: %v\n", s.name, err)
			os.Exit(1)
		}
	}
	measure("point SELECT, prepared, 1 connection", "queries/s", func(s server) (float64, error) {
		return pointQueries(ctx, s.dsn, pgx.QueryExecModeCacheStatement, 1)
	})
	measure("point SELECT, prepared, 8 connections", "queries/s", func(s server) (float64, error) {
		return pointQueries(ctx, s.dsn, pgx.QueryExecModeCacheStatement, 8)
	})
	measure("point SELECT, simple protocol, 1 connection", "queries/s", func(s server) (float64, error) {
		return pointQueries(ctx, s.dsn, pgx.QueryExecModeSimpleProtocol, 1)
	})
	measure("INSERT with parameters, pipelined by 500", "rows/s", func(s server) (float64, error) {
		return pipelinedInserts(ctx, s)
	})
	measure("full read of id + 128-d embedding, binary", "rows/s", func(s server) (float64, error) {
		return fullRead(ctx, s.dsn, true)
	})
	measure("full read of id + 128-d embedding, text", "rows/s", func(s server) (float64, error) {
		return fullRead(ctx, s.dsn, false)
	})
	report(results)
}

// load creates the table with rows rows.
func load(ctx context.Context, s server) error {
	conn, err := pgconn.Connect(ctx, s.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	ddl := fmt.Sprintf("DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS ins; "+
		"CREATE TABLE items (id bigint PRIMARY KEY, name text, score float8, emb %s); "+
		"CREATE TABLE ins (id bigint, name text, score float8)", s.embType)
	if _, err := conn.Exec(ctx, ddl).ReadAll(); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		var b strings.Builder
		for i := 0; i < *rows; i++ {
			b.Reset()
			fmt.Fprintf(&b, "%d\titem %d\t%g\t{", i, i, rng.Float64())
			for k := 0; k < dim; k++ {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatFloat(float64(float32(rng.NormFloat64())), 'g', -1, 32))
			}
			b.WriteString("}\n")
			if _, err := pw.Write([]byte(b.String())); err != nil {
				return
			}
		}
		pw.Close()
	}()
	_, err = conn.CopyFrom(ctx, pr, "COPY items FROM STDIN")
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "VACUUM items").ReadAll()
	return err
}

// pointQueries runs *queries primary-key lookups on conns connections and
// returns queries per second.
func pointQueries(ctx context.Context, dsn string, mode pgx.QueryExecMode, conns int) (float64, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	cfg.DefaultQueryExecMode = mode
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	per := *queries / conns
	cs := make([]*pgx.Conn, conns)
	for i := range cs {
		if cs[i], err = pgx.ConnectConfig(ctx, cfg); err != nil {
			return 0, err
		}
		defer cs[i].Close(ctx)
	}
	start := time.Now()
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for q := 0; q < per; q++ {
				id := rng.IntN(*rows)
				var name string
				var score float64
				if err := c.QueryRow(ctx, "SELECT name, score FROM items WHERE id = $1", id).Scan(&name, &score); err != nil {
					errs <- err
					return
				}
				if name != "item "+strconv.Itoa(id) {
					errs <- fmt.Errorf("id %d: name %q", id, name)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(per*conns) / time.Since(start).Seconds(), nil
}

// pipelinedInserts inserts *queries rows with parameters in pgx batches of
// 500 statements (one round trip and one Sync each) and returns rows per
// second.
func pipelinedInserts(ctx context.Context, s server) (float64, error) {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	for i := 0; i < *queries; i += 500 {
		b := &pgx.Batch{}
		for k := i; k < i+500 && k < *queries; k++ {
			b.Queue("INSERT INTO ins (id, name, score) VALUES ($1, $2, $3)", k, "row", float64(k))
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return 0, err
		}
	}
	return float64(*queries) / time.Since(start).Seconds(), nil
}

// fullRead reads every row's id and embedding, with binary or text results,
// decoding the embeddings into []float32, and returns rows per second (the
// best of three).
func fullRead(ctx context.Context, dsn string, binary bool) (float64, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	if !binary {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	best := 0.0
	emb := make([]float32, 0, dim)
	for range 3 {
		start := time.Now()
		rs, err := conn.Query(ctx, "SELECT id, emb FROM items")
		if err != nil {
			return 0, err
		}
		n := 0
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id, &emb); err != nil {
				rs.Close()
				return 0, err
			}
			if len(emb) != dim {
				rs.Close()
				return 0, fmt.Errorf("row %d: %d elements", id, len(emb))
			}
			n++
		}
		if err := rs.Err(); err != nil {
			return 0, err
		}
		if n != *rows {
			return 0, fmt.Errorf("read %d rows, want %d", n, *rows)
		}
		best = max(best, float64(n)/time.Since(start).Seconds())
	}
	return best, nil
}

func report(results []result) {
	fmt.Printf("Machine: %s. Table: %d rows (bigint key, text, float8, %d-d float32 embedding); %d point queries or inserts per measurement; client pgx v5 in the same process for both servers.\n\n",
		*machine, *rows, dim, *queries)
	fmt.Println("| measurement | deeplaked | PostgreSQL 15 | deeplaked / PostgreSQL |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	for _, r := range results {
		fmt.Printf("| %s | %.0f %s | %.0f %s | %.2f× |\n", r.name, r.dl, r.unit, r.pg, r.unit, r.dl/r.pg)
	}
}

package server_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/server"
)

// BenchmarkVectorSearch runs nearest-neighbour queries through the server
// in this process, for profiling the query path (bench/ann measures the
// anchors): exact, with an hnsw index, and filtered to 1% of the rows.
//
//	go test ./server -run '^$' -bench VectorSearch -benchtime 2000x -cpuprofile /tmp/cpu.out
func BenchmarkVectorSearch(b *testing.B) {
	rows := 100000
	if s := os.Getenv("BENCH_VECTOR_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	const dim = 128
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://bench@"+srv.Addr()+"/db?sslmode=disable")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE items (id int PRIMARY KEY, category int, embedding vector(128))"); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	centres := make([][]float32, 100)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for k := range centres[i] {
			centres[i][k] = float32(rng.NormFloat64())
		}
	}
	vec := func(c []float32) string {
		out := []byte{'['}
		for k, x := range c {
			if k > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendFloat(out, float64(x)+rng.NormFloat64()*0.5, 'g', 7, 32)
		}
		return string(append(out, ']'))
	}
	var text bytes.Buffer
	for i := range rows {
		text.WriteString(strconv.Itoa(i) + "\t" + strconv.Itoa(i%100) + "\t" + vec(centres[rng.IntN(len(centres))]) + "\n")
	}
	if _, err := conn.PgConn().CopyFrom(ctx, &text, "COPY items FROM STDIN"); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "VACUUM items"); err != nil {
		b.Fatal(err)
	}
	queries := make([]string, 100)
	for i := range queries {
		queries[i] = vec(centres[rng.IntN(len(centres))])
	}
	run := func(b *testing.B, sql string, args ...any) {
		b.Helper()
		i := 0
		for b.Loop() {
			rs, err := conn.Query(ctx, sql, append([]any{queries[i%len(queries)]}, args...)...)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rs.Next() {
				n++
			}
			if rs.Err() != nil || n != 10 {
				b.Fatalf("%d rows, %v", n, rs.Err())
			}
			i++
		}
	}
	b.Run("exact", func(b *testing.B) { run(b, "SELECT id FROM items ORDER BY embedding <-> $1 LIMIT 10") })
	if os.Getenv("BENCH_VECTOR_EXACT_ONLY") != "" {
		return
	}
	if _, err := conn.Exec(ctx, "CREATE INDEX ON items USING hnsw (embedding vector_l2_ops)"); err != nil {
		b.Fatal(err)
	}
	b.Run("hnsw", func(b *testing.B) { run(b, "SELECT id FROM items ORDER BY embedding <-> $1 LIMIT 10") })
	b.Run("hnsw-filter1pct", func(b *testing.B) {
		run(b, "SELECT id FROM items WHERE category = $2 ORDER BY embedding <-> $1 LIMIT 10", int32(7))
	})
}

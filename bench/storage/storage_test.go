package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/server"
)

// BenchmarkEmbScan measures the storage layer on a data directory that
// run.sh left behind (BENCH_DATA_DIR, table BENCH_TABLE, default t): a
// scan of emb with storage.Open + txn.Scan, consumed by one goroutine,
// and its anchors, copy() of the same bytes and a sequential read of the
// column's chunk files. Each sub-benchmark makes one untimed pass first,
// so the timed ones read from the page cache.
//
//	BENCH_DATA_DIR=/tmp/.../deeplaked go test ./bench/storage -run '^$' -bench EmbScan -benchtime 10x -cpu 1
func BenchmarkEmbScan(b *testing.B) {
	dir := os.Getenv("BENCH_DATA_DIR")
	if dir == "" {
		b.Skip("BENCH_DATA_DIR is not set")
	}
	table := os.Getenv("BENCH_TABLE")
	if table == "" {
		table = "t"
	}
	lt, err := openLocal(dir, table)
	if err != nil {
		b.Fatal(err)
	}
	defer lt.Close()
	const embCol = 1
	_, total, err := lt.scan(embCol)
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B, cpu0 int64) {
		bytes := float64(total) * float64(b.N)
		b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		b.ReportMetric(bytes/(float64(selfCPU().Nanoseconds()-cpu0)/1e9)/1e9, "GB/s/cpu")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
		b.SetBytes(total)
	}
	b.Run("scan", func(b *testing.B) {
		cpu0 := selfCPU().Nanoseconds()
		for b.Loop() {
			if _, n, err := lt.scan(embCol); err != nil || n != total {
				b.Fatalf("scan: %d bytes, %v", n, err)
			}
		}
		report(b, cpu0)
	})
	b.Run("copy", func(b *testing.B) {
		src, dst := newCopyBuffers()
		memCopy(total, src, dst)
		cpu0 := selfCPU().Nanoseconds()
		for b.Loop() {
			memCopy(total, src, dst)
		}
		report(b, cpu0)
	})
	b.Run("readfiles", func(b *testing.B) {
		files, err := chunkFiles(dir, strconv.FormatUint(lt.t.ID, 10), embCol)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		if _, _, err := readFiles(files, buf); err != nil {
			b.Fatal(err)
		}
		cpu0 := selfCPU().Nanoseconds()
		for b.Loop() {
			if _, _, err := readFiles(files, buf); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
	})
}

// BenchmarkCopyIngest COPYs BENCH_ROWS rows (default 20,000) into a
// deeplaked running in this process, for CPU profiles of the ingest path
// (the generator shows up as copyGen):
//
//	cd bench/storage && BENCH_ROWS=100000 go test -run '^$' -bench CopyIngest -benchtime 1x -cpuprofile /tmp/cpu.prof -o /tmp/storage.test
func BenchmarkCopyIngest(b *testing.B) {
	rows := envInt("BENCH_ROWS", 20_000)
	compression := os.Getenv("BENCH_COMPRESSION")
	if compression == "" {
		compression = "zstd"
	}
	ctx := context.Background()
	b.StopTimer()
	for range b.N {
		srv, conn := startInProcess(b)
		if err := exec(ctx, conn, "CREATE TABLE t "+fmt.Sprintf(dlSchema, compression)); err != nil {
			b.Fatal(err)
		}
		g := newCopyGen(seed, rows, embVector)
		b.StartTimer()
		if _, err := conn.CopyFrom(ctx, g, "COPY t FROM STDIN WITH (FORMAT binary)"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.SetBytes(g.Bytes)
		conn.Close(ctx)
		srv.Close()
	}
	b.ReportMetric(float64(rows*int64(b.N))/b.Elapsed().Seconds(), "rows/s")
}

func startInProcess(tb testing.TB) (*server.Server, *pgconn.PgConn) {
	tb.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: tb.TempDir(), Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := pgconn.Connect(context.Background(), "postgres://bench@"+srv.Addr()+"/bench")
	if err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	return srv, conn
}

// TestCopyGen loads generated rows into deeplaked and checks what it
// stored against a second generator with the same seed.
func TestCopyGen(t *testing.T) {
	const rows = 300
	for _, form := range []embForm{embVector, embFloat4Array} {
		n, err := io.Copy(io.Discard, newCopyGen(seed, rows, form))
		if err != nil {
			t.Fatal(err)
		}
		emb := 4 + 4*embDims
		if form == embFloat4Array {
			emb = 20 + 8*embDims
		}
		row := 2 + (4 + 8) + (4 + emb) + (4 + 20 + 8*tokenLen) + (4 + 4)
		if want := int64(19 + rows*row + 2); n != want {
			t.Fatalf("form %d: %d bytes, want %d", form, n, want)
		}
	}

	ctx := context.Background()
	srv, conn := startInProcess(t)
	defer srv.Close()
	defer conn.Close(ctx)
	if err := exec(ctx, conn, "CREATE TABLE t "+fmt.Sprintf(dlSchema, "zstd")); err != nil {
		t.Fatal(err)
	}
	tag, err := conn.CopyFrom(ctx, newCopyGen(seed, rows, embVector), "COPY t FROM STDIN WITH (FORMAT binary)")
	if err != nil || tag.RowsAffected() != rows {
		t.Fatalf("COPY: %v, %v", tag, err)
	}

	// Expected values, read back from a generator's row bytes.
	g := newCopyGen(seed, rows, embVector)
	var labels, padded, first int64
	pos := 19
	all, _ := io.ReadAll(g)
	be := binary.BigEndian
	for range rows {
		pos += 2 + 12 + 4 + 4 + 4*embDims + 4 + 20
		for k := range tokenLen {
			v := int32(be.Uint32(all[pos+8*k+4:]))
			if v == 0 {
				padded++
			}
			if k == 0 {
				first += int64(v)
			}
		}
		pos += 8 * tokenLen
		labels += int64(be.Uint32(all[pos+4:]))
		pos += 8
	}
	if padded == 0 || padded > rows*(tokenLen-128) {
		t.Fatalf("%d padding tokens", padded)
	}
	got, err := queryRow(ctx, conn, "SELECT count(*), sum(label), sum(vector_dims(emb)), sum(cardinality(tokens)), sum(tokens[1]) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{strconv.Itoa(rows), strconv.FormatInt(labels, 10), strconv.Itoa(rows * embDims), strconv.Itoa(rows * tokenLen), strconv.FormatInt(first, 10)}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

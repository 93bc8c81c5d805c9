package stream_test

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// imageBytes is the size of one uint8[3][64][64] image, bench/stream's row.
const imageBytes = 3 * 64 * 64

// BenchmarkStreamImages streams bench/stream's table (random, so
// incompressible, uint8[3][64][64] images plus an int label) from a server
// in this process through client/stream over loopback TCP, and measures
// in the same run the loopback ceiling: the same bytes sent from one
// goroutine to another over 127.0.0.1 in 1 MiB writes, before and after
// the stream (the higher of the two counts: the machine may be shared). It
// reports both rates and their ratio.
//
//	go test ./client/stream -run '^$' -bench StreamImages -benchtime 20x
//	BENCH_STREAM_ROWS=100000 go test ./client/stream -run '^$' -bench StreamImages -benchtime 5x
func BenchmarkStreamImages(b *testing.B) {
	rows := 20000
	if s := os.Getenv("BENCH_STREAM_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	dsn := loadImages(b, rows)
	conn, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	total := int64(rows * imageBytes)
	ceiling := loopbackRate(b, total)
	for _, bc := range []struct {
		name string
		opts stream.Options
	}{
		{"inorder", stream.Options{BatchSize: 256}},
		{"shuffled", stream.Options{BatchSize: 256, Shuffle: true, Seed: 7}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(total)
			start := time.Now()
			for b.Loop() {
				s, err := stream.Stream(context.Background(), conn, "SELECT image, label FROM samples", bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for s.Next() {
					n += s.Batch().Rows
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				if n != rows {
					b.Fatalf("%d rows, want %d", n, rows)
				}
			}
			rate := float64(total) * float64(b.N) / time.Since(start).Seconds() / 1e9
			b.StopTimer()
			c := max(ceiling, loopbackRate(b, total))
			b.ReportMetric(rate, "GB/s")
			b.ReportMetric(c, "loopback-GB/s")
			b.ReportMetric(rate/c, "ratio")
		})
	}
}

// loadImages starts a server and loads rows random images with binary COPY.
func loadImages(b *testing.B, rows int) string {
	b.Helper()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	dsn := "postgres://bench@" + srv.Addr() + "/db?sslmode=disable"
	conn, err := pgconn.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Exec(context.Background(), "CREATE TABLE samples (id int, image uint8[3][64][64], label int)").Close(); err != nil {
		b.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeImagesCopy(pw, rows))
	}()
	if _, err := conn.CopyFrom(context.Background(), pr, "COPY samples FROM STDIN (FORMAT binary)"); err != nil {
		b.Fatal(err)
	}
	if err := conn.Exec(context.Background(), "VACUUM samples").Close(); err != nil {
		b.Fatal(err)
	}
	return dsn
}

// writeImagesCopy writes rows rows in COPY's binary format: an image is
// PostgreSQL's array form of int2 elements (uint8 arrives as smallint).
func writeImagesCopy(w io.Writer, rows int) error {
	rng := rand.New(rand.NewPCG(7, 7))
	be := binary.BigEndian
	buf := append([]byte("PGCOPY\n\xff\r\n\x00"), make([]byte, 8)...)
	head := []uint32{3, 0, 21, 3, 1, 64, 1, 64, 1}
	for i := range rows {
		buf = be.AppendUint16(buf, 3)
		buf = be.AppendUint32(buf, 4)
		buf = be.AppendUint32(buf, uint32(i))
		buf = be.AppendUint32(buf, uint32(4*len(head)+imageBytes*6))
		for _, h := range head {
			buf = be.AppendUint32(buf, h)
		}
		for range imageBytes {
			buf = be.AppendUint32(buf, 2)
			buf = be.AppendUint16(buf, uint16(rng.IntN(256)))
		}
		buf = be.AppendUint32(buf, 4)
		buf = be.AppendUint32(buf, uint32(rng.IntN(1000)))
		if len(buf) > 1<<20 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = be.AppendUint16(buf, 0xFFFF)
	_, err := w.Write(buf)
	return err
}

// loopbackRate sends total bytes over 127.0.0.1 in 1 MiB writes, read
// into one reused 1 MiB buffer, and returns GB/s.
func loopbackRate(b *testing.B, total int64) float64 {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<20)
		for sent := int64(0); sent < total; sent += int64(len(buf)) {
			if _, err := c.Write(buf[:min(int64(len(buf)), total-sent)]); err != nil {
				return
			}
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	start := time.Now()
	var got int64
	for got < total {
		n, err := c.Read(buf)
		got += int64(n)
		if err != nil {
			b.Fatal(err)
		}
	}
	return float64(total) / time.Since(start).Seconds() / 1e9
}

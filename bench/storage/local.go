package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/deeplaked/deeplaked/storage"
)

// pass is one timed pass over some bytes.
type pass struct {
	Bytes int64
	Rows  int64
	Wall  time.Duration
	// CPU is the process's CPU time during the pass, background
	// goroutines (chunk loads, decompression) included.
	CPU time.Duration
	// Other is the CPU time the rest of the machine used meanwhile.
	Other time.Duration
}

// GBps is the pass's throughput in GB/s (10^9 bytes) of wall time.
func (p pass) GBps() float64 { return float64(p.Bytes) / p.Wall.Seconds() / 1e9 }

// GBpsCPU is the pass's throughput per second of CPU time: GB/s per core.
func (p pass) GBpsCPU() float64 { return float64(p.Bytes) / p.CPU.Seconds() / 1e9 }

// timed runs f and measures it.
func timed(f func() (rows, bytes int64, err error)) (pass, error) {
	busy0, cpu0, t0 := busyCPU(), selfCPU(), time.Now()
	rows, n, err := f()
	p := pass{Bytes: n, Rows: rows, Wall: time.Since(t0), CPU: selfCPU() - cpu0}
	p.Other = max(0, busyCPU()-busy0-p.CPU)
	return p, err
}

// localTable is a table of a data directory opened with storage.Open
// while no server runs on it.
type localTable struct {
	db *storage.DB
	t  *storage.TableDesc
}

func openLocal(dataDir, table string) (*localTable, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open(storage.Options{Dir: dataDir, Logger: quiet, NoCompaction: true})
	if err != nil {
		return nil, err
	}
	t, err := db.Table(table)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &localTable{db: db, t: t}, nil
}

func (l *localTable) Close() error { return l.db.Close() }

// scan reads column col of every row with one Scanner, consumed by the
// calling goroutine, and returns the rows and the bytes of the column's
// values it saw.
func (l *localTable) scan(col int) (rows, bytes int64, err error) {
	txn := l.db.Begin()
	defer txn.Rollback()
	sc, err := txn.Scan(l.t, []int{col})
	if err != nil {
		return 0, 0, err
	}
	defer sc.Close()
	var sink byte
	for {
		b, _, err := sc.Next()
		if err != nil {
			return rows, bytes, err
		}
		if b == nil {
			break
		}
		v := b.Cols[0]
		rows += int64(b.Len())
		bytes += int64(len(v.Bytes.Data))
		if len(v.Bytes.Data) > 0 {
			sink ^= v.Bytes.Data[len(v.Bytes.Data)-1]
		}
	}
	_ = sink
	return rows, bytes, nil
}

// memCopy copies total bytes with copy(), 8 MiB at a time (a chunk's
// size), from a 512 MiB source into one reused 8 MiB buffer: the memory
// traffic of moving the scanned bytes once.
func memCopy(total int64, src, dst []byte) (rows, bytes int64, err error) {
	off := 0
	for bytes < total {
		n := int(min(int64(len(dst)), total-bytes))
		if off+n > len(src) {
			off = 0
		}
		copy(dst[:n], src[off:off+n])
		off += n
		bytes += int64(n)
	}
	return 0, bytes, nil
}

// readFiles reads files sequentially into one reused buffer, as cat
// does, and returns the bytes read.
func readFiles(files []string, buf []byte) (rows, bytes int64, err error) {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, bytes, err
		}
		for {
			n, err := f.Read(buf)
			bytes += int64(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return 0, bytes, fmt.Errorf("reading %s: %w", name, err)
			}
		}
		f.Close()
	}
	return 0, bytes, nil
}

// newCopyBuffers returns memCopy's source (512 MiB, written so that its
// pages exist) and destination.
func newCopyBuffers() (src, dst []byte) {
	src = make([]byte, 512<<20)
	for i := 0; i < len(src); i += 4096 {
		src[i] = byte(i >> 12)
	}
	return src, make([]byte, 8<<20)
}

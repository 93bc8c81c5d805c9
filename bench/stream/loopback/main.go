// Command loopback measures the loopback TCP ceiling the tensor stream is
// held to: a sender writes -bytes bytes in -chunk-sized writes to a
// receiver over 127.0.0.1, the receiver reads them into one reused buffer,
// and the rate is printed as JSON. With -network unix the pair talks over
// a Unix socket instead.
//
// By default the sender writes one -chunk buffer again and again, which
// stays in its CPU's cache: the kernel's copy alone. With -distinct it
// sends -bytes of distinct data held in memory (filled before the clock
// starts), reading each byte from memory once, as any server sending a
// table larger than the CPU's caches must.
//
// With -file F it sends the first -bytes of file F as a server sends
// stored data: -send pread reads each -chunk into a buffer, checks it with
// CRC32C (as deeplaked checks the blocks it reads) and writes it; -send
// sendfile hands the file's pages to the socket (sendfile(2): no copy into
// the process, no checksum).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

func main() {
	total := flag.Int64("bytes", 2<<30, "bytes to send")
	chunk := flag.Int("chunk", 1<<20, "bytes per write and per read")
	network := flag.String("network", "tcp", "tcp (loopback) or unix")
	distinct := flag.Bool("distinct", false, "send -bytes of distinct data held in memory, each byte read once, instead of one -chunk buffer again and again")
	file := flag.String("file", "", "send the first -bytes of this file (see -send)")
	send := flag.String("send", "pread", "with -file: pread (read, CRC32C, write) or sendfile")
	flag.Parse()
	addr, name := "127.0.0.1:0", "loopback TCP ceiling"
	if *network == "unix" {
		dir, err := os.MkdirTemp("", "loopback")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		addr, name = filepath.Join(dir, "s"), "Unix socket ceiling"
	} else if *network != "tcp" {
		fail(fmt.Errorf("-network %q: want tcp or unix", *network))
	}
	var src []byte
	if *distinct {
		// Filled before the clock starts, so the pages are resident.
		name += ", distinct data"
		src = make([]byte, *total)
		for i := range src {
			src[i] = byte(i * 31 >> 8)
		}
	}
	var f *os.File
	if *file != "" {
		var err error
		if f, err = os.Open(*file); err != nil {
			fail(err)
		}
		st, err := f.Stat()
		if err != nil {
			fail(err)
		}
		*total = min(*total, st.Size())
		switch *send {
		case "pread":
			name += ", from a file (pread, CRC32C, write)"
		case "sendfile":
			name += ", from a file (sendfile)"
		default:
			fail(fmt.Errorf("-send %q: want pread or sendfile", *send))
		}
	}
	ln, err := net.Listen(*network, addr)
	if err != nil {
		fail(err)
	}
	go func() {
		c, err := net.Dial(*network, ln.Addr().String())
		if err != nil {
			fail(err)
		}
		if f != nil {
			sendFile(c, f, *total, *chunk, *send)
			c.Close()
			return
		}
		buf := make([]byte, *chunk)
		for sent := int64(0); sent < *total; {
			n := int64(len(buf))
			if n > *total-sent {
				n = *total - sent
			}
			if *distinct {
				buf = src[sent : sent+n]
			}
			if _, err := c.Write(buf[:n]); err != nil {
				fail(err)
			}
			sent += n
		}
		c.Close()
	}()
	c, err := ln.Accept()
	if err != nil {
		fail(err)
	}
	buf := make([]byte, *chunk)
	start := time.Now()
	var got int64
	var first time.Duration
	for {
		n, err := c.Read(buf)
		if got == 0 && n > 0 {
			first = time.Since(start)
		}
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(err)
		}
	}
	wall := time.Since(start)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"name": name, "bytes": got, "seconds": wall.Seconds(),
		"gb_per_s": float64(got) / wall.Seconds() / 1e9, "first_bytes_ms": first.Seconds() * 1000,
	})
}

// sendFile sends the first total bytes of f to c, chunk bytes at a time:
// read, checked and written (pread), or by sendfile.
func sendFile(c net.Conn, f *os.File, total int64, chunk int, how string) {
	if how == "sendfile" {
		// io.Copy from a LimitedReader over an *os.File to a TCP or Unix
		// connection is sendfile(2).
		if _, err := io.Copy(c, io.LimitReader(f, total)); err != nil {
			fail(err)
		}
		return
	}
	buf := make([]byte, chunk)
	var sum uint32
	for off := int64(0); off < total; {
		n := int(min(int64(chunk), total-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			fail(err)
		}
		sum = crc32.Update(sum, castagnoli, buf[:n])
		if _, err := c.Write(buf[:n]); err != nil {
			fail(err)
		}
		off += int64(n)
	}
	checksum = sum
}

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	// checksum keeps the pread sender's CRC from being optimized away.
	checksum uint32
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loopback:", err)
	os.Exit(1)
}

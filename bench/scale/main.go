// Command scale measures a full scan of a table whose chunks are on a slow
// object store, a model of S3 (each GET a transfer at -rate bytes/s, as
// one S3 connection carries about 88 MB/s):
//
//  1. its throughput against the reads the store may have in flight
//     (S3Options.ReadConcurrency, which bounds the parts of one chunk read
//     at once), beside the same scan of the store unthrottled;
//
//  2. epoch 1 through a storage.DiskCache (cold: every chunk from the slow
//     store) against epoch 2 (from the cache's files: in the page cache,
//     then dropped from it), and their ratio.
//
//     go run ./bench/scale                      # 1 GiB table, about a minute
//     go run ./bench/scale -rows 100000         # quick
//
// docs/scale.md has the figures and how to read them.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// rowWidth is the bytes of one row's tensor: a 64×48 uint8 image.
const rowWidth = 64 * 48

func main() {
	rows := flag.Int("rows", 350_000, "rows of the table (3,072-byte tensors: 350,000 is 1.07 GB)")
	rate := flag.Float64("rate", 88e6, "bytes per second of each GET of the slow store")
	latency := flag.Duration("latency", 0, "wait before each GET of the slow store (time to first byte)")
	concs := flag.String("conc", "1,2,4,8,16,32", "reads in flight to measure (S3Options.ReadConcurrency)")
	part := flag.Int64("part", storage.DefaultS3ReadPartSize, "bytes of the parts a chunk is read in (S3Options.ReadPartSize)")
	epochConc := flag.Int("epoch-conc", storage.DefaultS3ReadConcurrency, "reads in flight for the epochs through the disk cache")
	dir := flag.String("dir", "", "where the temporary directories go (default $TMPDIR)")
	flag.Parse()
	if err := run(*rows, *rate, *latency, *concs, *part, *epochConc, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(rows int, rate float64, latency time.Duration, concList string, part int64, epochConc int, base string) error {
	var concs []int
	for _, f := range strings.Split(concList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-conc %q: want numbers of 1 or more", concList)
		}
		concs = append(concs, n)
	}
	load0 := loadAvg()
	work, err := os.MkdirTemp(base, "deeplaked-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dataDir := filepath.Join(work, "dl")
	mem := storage.NewMemStore()
	slow := storage.NewFaultStore(mem, 1)
	slow.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectGet, storage.ObjectGetRange}, Delay: latency, BytesPerSecond: rate})

	t0 := time.Now()
	if err := load(dataDir, mem, rows); err != nil {
		return err
	}
	fmt.Printf("# bench/scale\n\n%d rows of a %d-byte tensor (%.2f GB) in %.1f s; GOMAXPROCS %d (%d CPUs), %s.\n",
		rows, rowWidth, float64(rows)*rowWidth/1e9, time.Since(t0).Seconds(), runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.Version())
	fmt.Printf("Slow store: MemStore behind a FaultStore, each GET %.0f MB/s", rate/1e6)
	if latency > 0 {
		fmt.Printf(" after %v", latency)
	}
	fmt.Printf("; chunks read in parts of %d kB, as S3Store does.\n\n", part>>10)

	// The anchor: the same reads unthrottled, fastest of two after an
	// untimed pass (the first pass of a process pays for growing its
	// heap).
	var anchor pass
	for i := range 3 {
		p, err := scanOnce(dataDir, newPartStore(mem, part, storage.DefaultS3ReadConcurrency))
		if err != nil {
			return err
		}
		if i > 0 && (anchor.wall == 0 || p.wall < anchor.wall) {
			anchor = p
		}
	}
	fmt.Printf("## Full scan against reads in flight\n\n")
	fmt.Printf("| reads in flight (ReadConcurrency) | GB/s | s | chunk GETs | most GETs at once | GB/s ÷ (most GETs × rate) |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, conc := range concs {
		ps := newPartStore(slow, part, conc)
		p, err := scanOnce(dataDir, ps)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.3f | %.2f | %d | %d | %.2f |\n", conc, p.GBps(), p.wall.Seconds(), ps.gets.Load(), ps.peak.Load(),
			p.GBps()*1e9/(float64(ps.peak.Load())*rate))
	}
	fmt.Printf("| anchor: the same reads, unthrottled (%d) | %.3f | %.2f | | | |\n\n", storage.DefaultS3ReadConcurrency, anchor.GBps(), anchor.wall.Seconds())

	// Epochs through the disk cache.
	cacheDir := filepath.Join(work, "cache")
	ps := newPartStore(slow, part, epochConc)
	cache, err := storage.NewDiskCache(ps, cacheDir, 4*int64(rows)*rowWidth+1<<30, storage.DiskCacheOptions{})
	if err != nil {
		return err
	}
	defer cache.Close()
	epoch1, err := scanOnce(dataDir, cache.Store())
	if err != nil {
		return err
	}
	gets1 := ps.gets.Load()
	epoch2, err := scanOnce(dataDir, cache.Store())
	if err != nil {
		return err
	}
	if err := dropPageCache(filepath.Join(cacheDir, "objects")); err != nil {
		return err
	}
	epoch2disk, err := scanOnce(dataDir, cache.Store())
	if err != nil {
		return err
	}
	st := cache.Stats()
	fmt.Printf("## Epochs through the disk cache (ReadConcurrency %d)\n\n", epochConc)
	fmt.Printf("| epoch | GB/s | s | chunk GETs of the slow store |\n| --- | ---: | ---: | ---: |\n")
	fmt.Printf("| 1, cold: from the slow store, filling the cache | %.3f | %.2f | %d |\n", epoch1.GBps(), epoch1.wall.Seconds(), gets1)
	fmt.Printf("| 2, from the cache's files (page cache) | %.3f | %.2f | %d |\n", epoch2.GBps(), epoch2.wall.Seconds(), ps.gets.Load()-gets1)
	fmt.Printf("| 2, from the cache's files, dropped from the page cache first | %.3f | %.2f | %d |\n\n", epoch2disk.GBps(), epoch2disk.wall.Seconds(), ps.gets.Load()-gets1)
	fmt.Printf("Epoch 2 / epoch 1: **%.1f×** (page cache), **%.1f×** (from disk); target ≥ 5×.\n",
		epoch1.wall.Seconds()/epoch2.wall.Seconds(), epoch1.wall.Seconds()/epoch2disk.wall.Seconds())
	fmt.Printf("Cache: %d files, %.2f GB; %d hits, %d misses, %d corrupt.\n", st.Files, float64(st.Bytes)/1e9, st.Hits, st.Misses, st.Corrupt)
	fmt.Printf("Load average (the machine's other work) at the start and the end: %s, %s.\n", load0, loadAvg())
	return nil
}

// load writes the table t (id int8, img uint8[64][48]) of rows random
// images into a database in dataDir whose objects are in store, and
// flushes it to chunks.
func load(dataDir string, store storage.ObjectStore, rows int) error {
	db, err := open(dataDir, store)
	if err != nil {
		return err
	}
	defer db.Close()
	t := &storage.TableDesc{Name: "t", Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8}, {Name: "img", Type: types.TensorOf(types.DTUint8, 64, 48)},
	}}
	if _, err := db.CreateTable(t, false); err != nil {
		return err
	}
	img := make([]byte, rowWidth)
	x := uint64(0x9e3779b97f4a7c15)
	for lo := 0; lo < rows; lo += 1000 {
		b := types.NewBatch(t.ColumnTypes(), 1000)
		for i := lo; i < min(lo+1000, rows); i++ {
			for j := 0; j < len(img); j += 8 { // xorshift: incompressible
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				for k := 0; k < 8; k++ {
					img[j+k] = byte(x >> (8 * k))
				}
			}
			b.Cols[0].AppendInt(int64(i))
			b.Cols[1].AppendBytes(img)
		}
		txn := db.Begin()
		if err := txn.Insert(t, b); err != nil {
			txn.Rollback()
			return err
		}
		if err := txn.Commit(); err != nil {
			return err
		}
	}
	return db.Flush(context.Background())
}

func open(dataDir string, store storage.ObjectStore) (*storage.DB, error) {
	return storage.Open(storage.Options{Dir: dataDir, Store: store, NoCompaction: true, FlushRows: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// pass is one timed scan.
type pass struct {
	bytes int64
	wall  time.Duration
}

func (p pass) GBps() float64 { return float64(p.bytes) / p.wall.Seconds() / 1e9 }

// scanOnce opens the database on store (so nothing decoded is left from
// an earlier pass) and times a scan of img consumed by one goroutine.
func scanOnce(dataDir string, store storage.ObjectStore) (pass, error) {
	db, err := open(dataDir, store)
	if err != nil {
		return pass{}, err
	}
	defer db.Close()
	t, err := db.Table("t")
	if err != nil {
		return pass{}, err
	}
	start := time.Now()
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.Scan(t, []int{1})
	if err != nil {
		return pass{}, err
	}
	defer sc.Close()
	var p pass
	for {
		b, _, err := sc.Next()
		if err != nil {
			return p, err
		}
		if b == nil {
			break
		}
		p.bytes += int64(len(b.Cols[0].Bytes.Data))
	}
	p.wall = time.Since(start)
	return p, nil
}

// loadAvg returns the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// dropPageCache asks the kernel to drop the cached pages of the files in
// dir, so that the next reads of them go to the disk.
func dropPageCache(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		f, err := os.Open(filepath.Join(dir, de.Name()))
		if err != nil {
			return err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

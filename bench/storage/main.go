// Command storage benchmarks deeplaked's storage path against PostgreSQL
// in the same run: COPY ingest of tensor rows, full scans, and bytes on
// disk per column and compression. run.sh builds deeplaked, starts it and
// a throwaway PostgreSQL 15 cluster, and runs the two phases:
//
//	storage -phase wire  -dl DSN -pg DSN -dl-data DIR -rows N -out results.json
//	storage -phase local -dl-data DIR -in results.json -out results.json -md results.md
//
// The wire phase talks to both servers; the local phase runs after
// deeplaked has stopped and reads its data directory with storage.Open.
// README.md has the figures and how to read them.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ingest is one COPY FROM STDIN.
type ingest struct {
	Rows      int64
	WireBytes int64
	Wall      time.Duration
	// ServerCPU and ClientCPU are the CPU time the server (PostgreSQL:
	// postmaster and backends) and this process used during the COPY.
	ServerCPU time.Duration
	ClientCPU time.Duration
	// OtherCPU is the CPU time the rest of the machine used meanwhile
	// (other processes, kernel writeback): what the run shared the
	// CPUs with.
	OtherCPU time.Duration
	// Settle is the time VACUUM took after the COPY.
	Settle time.Duration
	Err    string `json:",omitempty"`
}

func (in ingest) RowsPerSec() float64 { return float64(in.Rows) / in.Wall.Seconds() }
func (in ingest) WireMBps() float64   { return float64(in.WireBytes) / in.Wall.Seconds() / 1e6 }
func (in ingest) RawMBps() float64 {
	return float64(in.Rows*rawRowBytes) / in.Wall.Seconds() / 1e6
}

// query is one timed query: the fastest of the runs.
type query struct {
	Rows int64
	// Bytes are the bytes of the result's values received.
	Bytes     int64
	Wall      time.Duration
	ServerCPU time.Duration
	ClientCPU time.Duration
	OtherCPU  time.Duration
	Runs      []time.Duration
	Result    string `json:",omitempty"`
}

type scanResult struct {
	Name   string
	SQL    string
	DL, PG query
}

type pgDisk struct {
	Total, Heap, Toast int64
	// EmbCol and TokensCol are sum(pg_column_size(col)): the stored
	// (possibly compressed) size of the values.
	EmbCol, TokensCol int64
}

type variant struct {
	Compression string
	Rows        int64
	Ingest      ingest
	Disk        tableDisk
	Err         string `json:",omitempty"`
}

type localResults struct {
	GOMAXPROCS int
	Scan       pass // warm run, default GOMAXPROCS
	ScanCold   pass
	Scan1      pass // warm run, GOMAXPROCS=1
	MemCopy    pass
	ReadFiles  pass
	ReadFilesN int
}

type results struct {
	Date        string
	Machine     string
	CPUs        int
	GoVersion   string
	PGVersion   string
	Rows        int64
	VariantRows int64
	// Gen is the generator alone, into nothing: the client's ceiling.
	Gen      map[string]ingest
	Ingest   map[string]ingest
	Scans    []scanResult
	DLTable  string
	DLDisk   tableDisk
	DLData   int64
	PGDisk   pgDisk
	Variants []variant
	DLPeak   int64
	Local    *localResults `json:",omitempty"`
}

func main() {
	phase := flag.String("phase", "wire", "wire: ingest and scan over both servers; local: scan deeplaked's data directory")
	dlDSN := flag.String("dl", "", "deeplaked connection string")
	pgDSN := flag.String("pg", "", "PostgreSQL connection string")
	dlPID := flag.Int("dl-pid", 0, "deeplaked's pid, for its CPU time and peak memory")
	pgPID := flag.Int("pg-pid", 0, "the postmaster's pid, for PostgreSQL's CPU time")
	dataDir := flag.String("dl-data", "", "deeplaked's data directory")
	rows := flag.Int64("rows", envInt("BENCH_ROWS", 1_000_000), "rows of the main table (env BENCH_ROWS)")
	vrows := flag.Int64("variant-rows", envInt("BENCH_VARIANT_ROWS", 0), "rows of each compression variant (env BENCH_VARIANT_ROWS; 0: min(rows, 200000))")
	runs := flag.Int("runs", 2, "runs of each query; the fastest is reported")
	in := flag.String("in", "", "results of the wire phase (local phase)")
	out := flag.String("out", "results.json", "where to write the results")
	md := flag.String("md", "", "where to write the results table (Markdown)")
	machine := flag.String("machine", "", "machine description for the report")
	flag.Parse()

	var err error
	switch *phase {
	case "wire":
		if *vrows <= 0 {
			*vrows = min(*rows, 200_000)
		}
		r := &results{Date: time.Now().UTC().Format("2006-01-02"), Machine: *machine, CPUs: runtime.NumCPU(),
			GoVersion: runtime.Version(), Rows: *rows, VariantRows: *vrows}
		b := &wireBench{r: r, dlPID: *dlPID, pgPID: *pgPID, dataDir: *dataDir, runs: *runs}
		if err = b.run(context.Background(), *dlDSN, *pgDSN); err == nil {
			err = writeJSON(*out, r)
		}
	case "local":
		var r results
		if err = readJSON(*in, &r); err != nil {
			break
		}
		if r.Local, err = runLocal(*dataDir, r.DLTable, r.Rows); err != nil {
			break
		}
		if err = writeJSON(*out, &r); err != nil {
			break
		}
		table := report(&r)
		fmt.Print(table)
		if *md != "" {
			err = os.WriteFile(*md, []byte(table), 0o644)
		}
	default:
		err = fmt.Errorf("unknown phase %q", *phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "storage bench:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64); err == nil {
			return n
		}
	}
	return def
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// wireBench runs the wire phase.
type wireBench struct {
	r            *results
	dl, pg       *pgconn.PgConn
	dlPID, pgPID int
	dataDir      string
	runs         int
}

const (
	dlSchema = "(id int8, emb vector(768), tokens int32[512] COMPRESSION %s, label int4)"
	pgSchema = "(id int8, emb real[], tokens int4[], label int4)"
	seed     = 42
)

func (b *wireBench) run(ctx context.Context, dlDSN, pgDSN string) error {
	var err error
	if b.dl, err = pgconn.Connect(ctx, dlDSN); err != nil {
		return fmt.Errorf("connecting to deeplaked: %w", err)
	}
	defer b.dl.Close(ctx)
	if b.pg, err = pgconn.Connect(ctx, pgDSN); err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer b.pg.Close(ctx)
	b.r.PGVersion = b.pg.ParameterStatus("server_version")
	r := b.r

	step("generator alone, %d rows", r.Rows)
	r.Gen = map[string]ingest{
		"vector":   genOnly(r.Rows, embVector),
		"float4[]": genOnly(r.Rows, embFloat4Array),
	}

	// Ingest: deeplaked, then PostgreSQL, each settled with VACUUM.
	r.Ingest = map[string]ingest{}
	step("deeplaked: COPY %d rows", r.Rows)
	before, err := tableDirs(b.dataDir)
	if err != nil {
		return err
	}
	dl, err := b.load(ctx, b.dl, b.dlPID, "t", fmt.Sprintf(dlSchema, "zstd"), r.Rows, embVector)
	r.Ingest["deeplaked"] = dl
	if err != nil {
		return fmt.Errorf("deeplaked: %w", err)
	}
	after, err := tableDirs(b.dataDir)
	if err != nil {
		return err
	}
	if r.DLTable = newTableDir(before, after); r.DLTable == "" {
		return fmt.Errorf("deeplaked: no new table directory under %s/objects/tables after COPY", b.dataDir)
	}
	step("PostgreSQL: COPY %d rows", r.Rows)
	pg, err := b.load(ctx, b.pg, b.pgPID, "t", pgSchema, r.Rows, embFloat4Array)
	r.Ingest["postgres"] = pg
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	waitIdle(b.dlPID)
	waitIdle(b.pgPID)
	settleDisk()

	// Scans.
	for _, q := range []struct{ name, sql string }{
		{"count(*)", "SELECT count(*) FROM t"},
		{"sum(label)", "SELECT sum(label) FROM t"},
		{"emb", "SELECT emb FROM t"},
	} {
		s := scanResult{Name: q.name, SQL: q.sql}
		step("deeplaked: %s", q.sql)
		if s.DL, err = b.query(ctx, b.dl, b.dlPID, q.sql); err != nil {
			return fmt.Errorf("deeplaked: %s: %w", q.sql, err)
		}
		step("PostgreSQL: %s", q.sql)
		if s.PG, err = b.query(ctx, b.pg, b.pgPID, q.sql); err != nil {
			return fmt.Errorf("PostgreSQL: %s: %w", q.sql, err)
		}
		if s.DL.Result != s.PG.Result {
			return fmt.Errorf("%s: deeplaked says %q, PostgreSQL %q", q.sql, s.DL.Result, s.PG.Result)
		}
		r.Scans = append(r.Scans, s)
	}

	// Bytes on disk.
	if r.DLDisk, err = measureTable(b.dataDir, r.DLTable); err != nil {
		return err
	}
	step("PostgreSQL: sizes")
	vals, err := queryRow(ctx, b.pg, `SELECT pg_total_relation_size('t'), pg_relation_size('t'),
		coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 't'::regclass), 0),
		(SELECT sum(pg_column_size(emb)) FROM t), (SELECT sum(pg_column_size(tokens)) FROM t)`)
	if err != nil {
		return err
	}
	d := &r.PGDisk
	for i, p := range []*int64{&d.Total, &d.Heap, &d.Toast, &d.EmbCol, &d.TokensCol} {
		*p, _ = strconv.ParseInt(vals[i], 10, 64)
	}

	// Compression variants of tokens, on deeplaked.
	for _, c := range []string{"none", "lz4", "s2", "zstd"} {
		v := variant{Compression: c, Rows: r.VariantRows}
		if c == "zstd" && r.VariantRows == r.Rows {
			v.Ingest, v.Disk = r.Ingest["deeplaked"], r.DLDisk
			r.Variants = append(r.Variants, v)
			continue
		}
		step("deeplaked: COPY %d rows, tokens %s", v.Rows, c)
		before, _ := tableDirs(b.dataDir)
		name := "t_" + c
		v.Ingest, err = b.load(ctx, b.dl, b.dlPID, name, fmt.Sprintf(dlSchema, c), v.Rows, embVector)
		if err == nil {
			after, _ := tableDirs(b.dataDir)
			if id := newTableDir(before, after); id == "" {
				err = fmt.Errorf("no new table directory")
			} else {
				v.Disk, err = measureTable(b.dataDir, id)
			}
		}
		if err != nil {
			v.Err = err.Error()
			fmt.Fprintf(os.Stderr, "deeplaked: variant %s: %v\n", c, err)
		}
		r.Variants = append(r.Variants, v)
	}
	r.DLData = dirSize(b.dataDir)
	r.DLPeak = peakRSS(b.dlPID)
	return nil
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// genOnly times the generator writing rows into nothing.
func genOnly(rows int64, form embForm) ingest {
	g := newCopyGen(seed, rows, form)
	buf := make([]byte, 65536)
	cpu0, t0 := selfCPU(), time.Now()
	for {
		if _, err := g.Read(buf); err != nil {
			break
		}
	}
	return ingest{Rows: rows, WireBytes: g.Bytes, Wall: time.Since(t0), ClientCPU: selfCPU() - cpu0}
}

// load creates table name with schema and COPYs rows into it in binary
// format, then runs VACUUM on it.
func (b *wireBench) load(ctx context.Context, c *pgconn.PgConn, pid int, name, schema string, rows int64, form embForm) (ingest, error) {
	if err := exec(ctx, c, "DROP TABLE IF EXISTS "+name); err != nil {
		return ingest{}, err
	}
	if err := exec(ctx, c, "CREATE TABLE "+name+" "+schema); err != nil {
		return ingest{}, err
	}
	settleDisk()
	g := newCopyGen(seed, rows, form)
	busy0, cpu0, scpu0, t0 := busyCPU(), selfCPU(), treeCPU(pid), time.Now()
	tag, err := c.CopyFrom(ctx, g, "COPY "+name+" FROM STDIN WITH (FORMAT binary)")
	in := ingest{WireBytes: g.Bytes, Wall: time.Since(t0), ServerCPU: treeCPU(pid) - scpu0, ClientCPU: selfCPU() - cpu0}
	in.OtherCPU = max(0, busyCPU()-busy0-in.ServerCPU-in.ClientCPU)
	if err != nil {
		in.Err = err.Error()
		return in, fmt.Errorf("COPY after %d bytes: %w", g.Bytes, err)
	}
	if in.Rows = tag.RowsAffected(); in.Rows != rows {
		return in, fmt.Errorf("COPY says %q, want %d rows", tag, rows)
	}
	t1 := time.Now()
	if err := exec(ctx, c, "VACUUM "+name); err != nil {
		return in, err
	}
	in.Settle = time.Since(t1)
	return in, nil
}

// query runs sql b.runs times and keeps the fastest run.
func (b *wireBench) query(ctx context.Context, c *pgconn.PgConn, pid int, sql string) (query, error) {
	var best query
	for i := 0; i < b.runs; i++ {
		var q query
		busy0, cpu0, scpu0, t0 := busyCPU(), selfCPU(), treeCPU(pid), time.Now()
		mrr := c.Exec(ctx, sql)
		for mrr.NextResult() {
			rr := mrr.ResultReader()
			for rr.NextRow() {
				vals := rr.Values()
				q.Rows++
				for _, v := range vals {
					q.Bytes += int64(len(v))
				}
				if q.Rows == 1 && len(vals) == 1 && len(vals[0]) < 40 {
					q.Result = string(vals[0])
				}
			}
			if _, err := rr.Close(); err != nil {
				mrr.Close()
				return q, err
			}
		}
		if err := mrr.Close(); err != nil {
			return q, err
		}
		q.Wall, q.ServerCPU, q.ClientCPU = time.Since(t0), treeCPU(pid)-scpu0, selfCPU()-cpu0
		q.OtherCPU = max(0, busyCPU()-busy0-q.ServerCPU-q.ClientCPU)
		if q.Rows > 1 {
			q.Result = strconv.FormatInt(q.Rows, 10) + " rows"
		}
		runs := append(best.Runs, q.Wall)
		if i == 0 || q.Wall < best.Wall {
			best = q
		}
		best.Runs = runs
	}
	return best, nil
}

func exec(ctx context.Context, c *pgconn.PgConn, sql string) error {
	_, err := c.Exec(ctx, sql).ReadAll()
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

func queryRow(ctx context.Context, c *pgconn.PgConn, sql string) ([]string, error) {
	res, err := c.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sql, err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return nil, fmt.Errorf("%s: not one row", sql)
	}
	var out []string
	for _, v := range res[0].Rows[0] {
		out = append(out, string(v))
	}
	return out, nil
}

// settleDisk writes out the dirty pages of earlier phases (sync(2)), so
// that their writeback does not run into the next measurement.
func settleDisk() { syscall.Sync() }

// waitIdle waits until process tree pid uses under 5% of a CPU over half
// a second (at most 60 s), so that background work (flushes, autovacuum)
// does not run into the next measurement.
func waitIdle(pid int) {
	if pid == 0 {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	prev := treeCPU(pid)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		cur := treeCPU(pid)
		if cur-prev < 25*time.Millisecond {
			return
		}
		prev = cur
	}
}

// runLocal measures the storage layer on deeplaked's data directory:
// scans of emb with storage.Open + Scan, and the anchors.
func runLocal(dataDir, tableID string, rows int64) (*localResults, error) {
	l := &localResults{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	const embCol = 1
	scan := func() (pass, pass, error) {
		lt, err := openLocal(dataDir, "t")
		if err != nil {
			return pass{}, pass{}, err
		}
		defer lt.Close()
		first, err := timed(func() (int64, int64, error) { return lt.scan(embCol) })
		if err != nil {
			return first, pass{}, err
		}
		second, err := timed(func() (int64, int64, error) { return lt.scan(embCol) })
		if err == nil && (first.Rows != rows || second.Rows != rows) {
			err = fmt.Errorf("scan read %d and %d rows, want %d", first.Rows, second.Rows, rows)
		}
		return first, second, err
	}
	step("local: scan emb, GOMAXPROCS=%d", l.GOMAXPROCS)
	var err error
	if l.ScanCold, l.Scan, err = scan(); err != nil {
		return nil, err
	}
	step("local: scan emb, GOMAXPROCS=1")
	prev := runtime.GOMAXPROCS(1)
	_, l.Scan1, err = scan()
	runtime.GOMAXPROCS(prev)
	if err != nil {
		return nil, err
	}

	step("local: copy() %d bytes", l.Scan.Bytes)
	src, dst := newCopyBuffers()
	for range 2 {
		l.MemCopy, _ = timed(func() (int64, int64, error) { return memCopy(l.Scan.Bytes, src, dst) })
	}
	src = nil

	files, err := chunkFiles(dataDir, tableID, embCol)
	if err != nil {
		return nil, err
	}
	l.ReadFilesN = len(files)
	step("local: read %d chunk files of emb", len(files))
	buf := make([]byte, 1<<20)
	for range 2 {
		if l.ReadFiles, err = timed(func() (int64, int64, error) { return readFiles(files, buf) }); err != nil {
			return nil, err
		}
	}
	return l, nil
}

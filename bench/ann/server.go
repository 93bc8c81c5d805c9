package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The statements measured, as a pgvector user writes them.
const (
	sqlSchema    = "CREATE TABLE items (id int PRIMARY KEY, category int, embedding vector(%d))"
	sqlKNN       = "SELECT id FROM items ORDER BY embedding <-> $1 LIMIT %d"
	sqlKNNCat    = "SELECT id FROM items WHERE category = $2 ORDER BY embedding <-> $1 LIMIT %d"
	sqlIndex     = "CREATE INDEX ON items USING hnsw (embedding vector_l2_ops) WITH (m = 16, ef_construction = 64)"
	indexName    = "items_embedding_idx" // PostgreSQL's name for the index sqlIndex creates
	sqlIndexSize = "SELECT pg_relation_size('" + indexName + "'::regclass)"
	indexParams  = "m=16, ef_construction=64"
)

// serverBench measures deeplaked (or any server speaking pgvector's SQL).
type serverBench struct {
	d         *dataSet
	truth     []int32
	truthCat  []int32
	dsn       string
	dataDir   string // the server's data directory, to measure its growth; may be empty
	clients   int
	efs       []int
	exactN    int    // queries of the exact passes
	indexSQL  string // the CREATE INDEX statement; sqlIndex unless told
	serverPID int    // the server's process, to read its RSS; 0 if not known
	params    [][]byte
	paramCat  [][]byte
	// searchOnly skips the load, the exact passes and the build.
	searchOnly bool
}

// run loads the table and measures exact search, the index build and the
// index searches, printing one result line each. A failed CREATE INDEX is
// reported and skips only the index measurements.
func (b *serverBench) run(ctx context.Context) error {
	b.encodeQueries()
	conn, err := pgconn.Connect(ctx, b.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if b.searchOnly {
		return b.indexPasses(ctx)
	}
	if err := b.load(ctx, conn); err != nil {
		return err
	}

	exact := b.exactN
	logf("deeplaked: exact search, %d queries", exact)
	if err := b.search(ctx, "exact", "", 0, 1, exact, false); err != nil {
		return err
	}
	logf("deeplaked: exact search with the 1%% filter, %d queries", exact)
	if err := b.search(ctx, "exact", "", 0, 1, exact, true); err != nil {
		return err
	}

	logf("deeplaked: CREATE INDEX ... USING hnsw")
	if ok, err := b.buildIndex(ctx, conn); err != nil || !ok {
		return err
	}
	return b.indexPasses(ctx)
}

// indexPasses searches through the index at each ef: one client, the
// concurrent clients, and one client with the filter.
func (b *serverBench) indexPasses(ctx context.Context) error {
	for _, ef := range b.efs {
		set := fmt.Sprintf("SET hnsw.ef_search = %d", ef)
		logf("deeplaked: %s", set)
		if err := b.search(ctx, "index", set, ef, 1, b.d.Queries, false); err != nil {
			return err
		}
		if err := b.search(ctx, "index", set, ef, b.clients, b.d.Queries, false); err != nil {
			return err
		}
		if err := b.search(ctx, "index", set, ef, 1, b.d.Queries, true); err != nil {
			return err
		}
	}
	return nil
}

// encodeQueries makes the bind parameters of every query: the vector in
// pgvector's binary form (int16 dim, int16 0, big-endian float4s) and the
// category as a binary int4.
func (b *serverBench) encodeQueries() {
	d := b.d
	b.params = make([][]byte, d.Queries)
	b.paramCat = make([][]byte, d.Queries)
	for i := range d.Queries {
		b.params[i] = appendVectorBinary(nil, d.query(i))
		b.paramCat[i] = binary.BigEndian.AppendUint32(nil, uint32(d.queryCats[i]))
	}
}

func appendVectorBinary(dst []byte, v []float32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	dst = binary.BigEndian.AppendUint16(dst, 0)
	for _, x := range v {
		dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// vectorText is v in pgvector's text form, for EXPLAIN.
func vectorText(v []float32) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	sb.WriteByte(']')
	return sb.String()
}

// load creates items and fills it with binary COPY, then VACUUMs it.
func (b *serverBench) load(ctx context.Context, conn *pgconn.PgConn) error {
	d := b.d
	if err := exec(ctx, conn, "DROP TABLE IF EXISTS items"); err != nil {
		return err
	}
	if err := exec(ctx, conn, fmt.Sprintf(sqlSchema, d.Dim)); err != nil {
		return err
	}
	logf("deeplaked: COPY %d rows", d.Rows)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(b.writeCopy(pw)) }()
	t0 := time.Now()
	tag, err := conn.CopyFrom(ctx, pr, "COPY items (id, category, embedding) FROM STDIN WITH (FORMAT binary)")
	pr.Close()
	if err != nil {
		return fmt.Errorf("COPY: %w", err)
	}
	if tag.RowsAffected() != int64(d.Rows) {
		return fmt.Errorf("COPY says %q, want %d rows", tag, d.Rows)
	}
	copyS := time.Since(t0).Seconds()
	t1 := time.Now()
	if err := exec(ctx, conn, "VACUUM items"); err != nil {
		return err
	}
	r := result{System: "deeplaked", Phase: "load", Name: "deeplaked COPY (FORMAT binary) + VACUUM", Rows: d.Rows,
		Seconds: copyS + time.Since(t1).Seconds(), Note: fmt.Sprintf("COPY %.1f s, VACUUM %.1f s", copyS, time.Since(t1).Seconds())}
	if b.dataDir != "" {
		r.SizeBytes, r.SizeNote = dirSize(b.dataDir), "data directory after the load"
	}
	r.print()
	return nil
}

// writeCopy writes the rows as a PostgreSQL binary COPY stream.
func (b *serverBench) writeCopy(w io.Writer) error {
	d := b.d
	buf := append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)
	for i := range d.Rows {
		buf = binary.BigEndian.AppendUint16(buf, 3)
		buf = binary.BigEndian.AppendUint32(buf, 4)
		buf = binary.BigEndian.AppendUint32(buf, uint32(i))
		buf = binary.BigEndian.AppendUint32(buf, 4)
		buf = binary.BigEndian.AppendUint32(buf, uint32(d.categories[i]))
		buf = binary.BigEndian.AppendUint32(buf, uint32(4+4*d.Dim))
		buf = appendVectorBinary(buf, d.vector(i))
		if len(buf) >= 1<<20 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = binary.BigEndian.AppendUint16(buf, 0xffff)
	_, err := w.Write(buf)
	return err
}

// buildIndex times CREATE INDEX and reports the index size. It returns
// false, having printed why, when the server cannot build the index.
func (b *serverBench) buildIndex(ctx context.Context, conn *pgconn.PgConn) (bool, error) {
	before := int64(-1)
	if b.dataDir != "" {
		before = dirSize(b.dataDir)
	}
	rssBefore := serverRSS(b.serverPID)
	t0 := time.Now()
	_, err := conn.Exec(ctx, b.indexSQL).ReadAll()
	r := result{System: "deeplaked", Phase: "build", Name: "deeplaked HNSW index", Rows: b.d.Rows, Params: indexParams}
	if b.indexSQL != sqlIndex {
		r.Params = b.indexSQL
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return false, fmt.Errorf("%s: %w", b.indexSQL, err)
		}
		r.Unavailable, r.SQLState, r.Error = true, pgErr.Code, pgErr.Message
		r.Note = "CREATE INDEX ... USING hnsw failed: no index measurements in this run"
		r.print()
		return false, nil
	}
	r.Seconds = time.Since(t0).Seconds()
	if res, err := conn.Exec(ctx, sqlIndexSize).ReadAll(); err == nil && len(res) == 1 && len(res[0].Rows) == 1 {
		if n, err := strconv.ParseInt(string(res[0].Rows[0][0]), 10, 64); err == nil && n > 0 {
			r.SizeBytes, r.SizeNote = n, "pg_relation_size('"+indexName+"')"
		}
	}
	if r.SizeBytes == 0 && b.dataDir != "" {
		// deeplaked keeps a saved graph as objects/tables/T/indexes/I/*.hnsw.
		if n := indexFilesSize(b.dataDir); n > 0 {
			r.SizeBytes, r.SizeNote = n, "index objects in the data directory (pg_relation_size reports 0)"
		} else {
			r.SizeBytes, r.SizeNote = dirSize(b.dataDir)-before, "growth of the data directory during CREATE INDEX"
		}
	}
	if b.serverPID > 0 {
		if rss := serverRSS(b.serverPID); rss > 0 && rssBefore > 0 {
			r.Note = fmt.Sprintf("server RSS %.0f → %.0f MB", float64(rssBefore)/1e6, float64(rss)/1e6)
		}
	}
	r.print()
	return true, nil
}

// search runs the queries (n of them) over clients connections, each
// first running set (if any), and prints QPS, latency and recall@k.
func (b *serverBench) search(ctx context.Context, kind, set string, ef, clients, n int, filtered bool) error {
	d := b.d
	stmt, truth := fmt.Sprintf(sqlKNN, d.K), b.truth
	explain := fmt.Sprintf("EXPLAIN SELECT id FROM items ORDER BY embedding <-> '%s' LIMIT %d", vectorText(d.query(0)), d.K)
	r := result{System: "deeplaked", Phase: "search", Search: kind, EF: ef, Clients: clients, Rows: d.Rows}
	if filtered {
		stmt, truth = fmt.Sprintf(sqlKNNCat, d.K), b.truthCat
		explain = fmt.Sprintf("EXPLAIN SELECT id FROM items WHERE category = %d ORDER BY embedding <-> '%s' LIMIT %d",
			d.queryCats[0], vectorText(d.query(0)), d.K)
		r.Filter = fmt.Sprintf("category = x (1 of %d)", d.Categories)
	}
	r.Name = "deeplaked " + kind
	conns := make([]*pgconn.PgConn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(ctx)
			}
		}
	}()
	for i := range conns {
		c, err := pgconn.Connect(ctx, b.dsn)
		if err != nil {
			return err
		}
		conns[i] = c
		if set != "" {
			if err := exec(ctx, c, set); err != nil {
				return err
			}
		}
		if _, err := c.Prepare(ctx, "knn", stmt, nil); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if plan, err := explainPlan(ctx, conns[0], explain); err == nil {
		r.Plan = plan
	} else {
		r.Plan = "EXPLAIN failed: " + err.Error()
	}

	bind := func(i int) [][]byte {
		if filtered {
			return [][]byte{b.params[i], b.paramCat[i]}
		}
		return [][]byte{b.params[i]}
	}
	formats := []int16{1, 1}[:len(bind(0))]
	resultFormats := []int16{1}
	// Warm up: the first queries of the set on every connection.
	for _, c := range conns {
		for i := range min(10, n) {
			if _, err := knn(ctx, c, bind(i), formats, resultFormats); err != nil {
				return err
			}
		}
	}

	got := make([][]int32, n)
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, clients)
	t0 := time.Now()
	for ci, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := time.Now()
				ids, err := knn(ctx, c, bind(i), formats, resultFormats)
				lat[i] = time.Since(s)
				if err != nil {
					errs[ci] = err
					return
				}
				got[i] = ids
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	timing(&r, lat, wall)
	scoreRecall(&r, truth, d.K, got)
	r.print()
	return nil
}

// knn runs the prepared statement "knn" and returns the ids it found.
func knn(ctx context.Context, c *pgconn.PgConn, params [][]byte, formats, resultFormats []int16) ([]int32, error) {
	res := c.ExecPrepared(ctx, "knn", params, formats, resultFormats).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	ids := make([]int32, 0, len(res.Rows))
	for _, row := range res.Rows {
		if len(row[0]) != 4 {
			return nil, fmt.Errorf("id of %d bytes, want a binary int4", len(row[0]))
		}
		ids = append(ids, int32(binary.BigEndian.Uint32(row[0])))
	}
	return ids, nil
}

var vectorLiteral = regexp.MustCompile(`'\[[^\]]*\]'`)

// explainPlan returns the plan of an EXPLAIN, its lines joined by " / ".
func explainPlan(ctx context.Context, c *pgconn.PgConn, sql string) (string, error) {
	res, err := c.Exec(ctx, sql).ReadAll()
	if err != nil {
		return "", err
	}
	var lines []string
	for _, r := range res {
		for _, row := range r.Rows {
			lines = append(lines, strings.TrimSpace(strings.TrimLeft(string(row[0]), " ->")))
		}
	}
	// The literal query vector would make the plan long.
	return vectorLiteral.ReplaceAllString(strings.Join(lines, " / "), "'[...]'"), nil
}

func exec(ctx context.Context, c *pgconn.PgConn, sql string) error {
	if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// dirSize is the total size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// indexFilesSize is the total size of the files under an "indexes"
// directory below dir.
func indexFilesSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && strings.Contains(path, string(filepath.Separator)+"indexes"+string(filepath.Separator)) {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// serverRSS is the resident memory of process pid in bytes, 0 if unknown.
func serverRSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

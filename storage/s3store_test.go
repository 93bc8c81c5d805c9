package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// proxyAction is what faultProxy does with one request.
type proxyAction int

const (
	forward      proxyAction = iota
	reject503                // answer 503 SlowDown without forwarding
	reject400                // answer 400 InvalidRequest without forwarding
	loseReply                // forward, then answer 500 as if the reply was lost
	truncateBody             // forward, then send half of the reply's body
)

// faultProxy sits between an S3Store and versitygw, records the requests
// and misbehaves on those its rule picks: the faults a network and a busy
// S3 produce, which no wrapper above the SDK can imitate.
type faultProxy struct {
	rp  *httputil.ReverseProxy
	URL string

	mu   sync.Mutex
	rule func(r *http.Request) proxyAction
	seen []string // "<op> <status>" of each request
	// rangeDelay holds each ranged GET this long before forwarding it;
	// ranged and peakRanged count those in flight and the most at once;
	// conns counts the connections clients opened.
	rangeDelay         time.Duration
	ranged, peakRanged int
	conns              int
}

func newFaultProxy(t *testing.T, gw *s3test.Server) *faultProxy {
	target, err := url.Parse(gw.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(target)}
	p.rp.ErrorLog = log.New(io.Discard, "", 0) // aborted requests are expected
	srv := httptest.NewUnstartedServer(p)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			p.mu.Lock()
			p.conns++
			p.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// requestOp names an S3 request by method and the query that tells the
// operations apart.
func requestOp(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart"
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "AbortMultipartUpload"
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		return "ListObjectsV2"
	}
	return r.Method
}

func (p *faultProxy) setRule(rule func(r *http.Request) proxyAction) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

// requests returns the log and clears it.
func (p *faultProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.seen
	p.seen = nil
	return seen
}

// countOf counts the entries of reqs that are entry or start with it and
// a space.
func countOf(reqs []string, entry string) int {
	n := 0
	for _, e := range reqs {
		if e == entry || strings.HasPrefix(e, entry+" ") {
			n++
		}
	}
	return n
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	act := forward
	if p.rule != nil {
		act = p.rule(r)
	}
	delay := p.rangeDelay
	ranged := r.Method == http.MethodGet && r.Header.Get("Range") != ""
	if ranged {
		p.ranged++
		p.peakRanged = max(p.peakRanged, p.ranged)
	}
	p.mu.Unlock()
	if ranged {
		defer func() {
			p.mu.Lock()
			p.ranged--
			p.mu.Unlock()
		}()
		time.Sleep(delay)
	}
	op := requestOp(r)
	if r.Header.Get("If-None-Match") == "*" {
		op += "-IfNoneMatch"
	}
	record := func(status int) {
		p.mu.Lock()
		p.seen = append(p.seen, fmt.Sprintf("%s %d", op, status))
		p.mu.Unlock()
	}
	switch act {
	case reject503, reject400:
		status, code := http.StatusServiceUnavailable, "SlowDown"
		if act == reject400 {
			status, code = http.StatusBadRequest, "InvalidRequest"
		}
		record(status)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>injected by the test</Message></Error>", code)
		return
	case forward:
		// Recorded as the reply's header goes out, before the client
		// can have the reply: a test that reads the log right after a
		// call returns sees that call's requests.
		rec := &statusRecorder{ResponseWriter: w, onHeader: record}
		p.rp.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.WriteHeader(http.StatusOK)
		}
		return
	}
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	record(rec.Code)
	if act == loseReply {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "<Error><Code>InternalError</Code><Message>reply lost by the test</Message></Error>")
		return
	}
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body[:len(body)/2]) // the server closes the short connection
}

// statusRecorder passes a reply on, calling onHeader with its final
// status just before that header is sent.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	onHeader func(status int)
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 && status >= 200 { // not an informational 100 Continue
		r.status = status
		r.onHeader(status)
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// proxiedStore returns an S3Store on a fresh bucket whose requests pass
// through p.
func proxiedStore(t *testing.T, gw *s3test.Server, p *faultProxy, edit ...func(*storage.S3Options)) *storage.S3Store {
	return gw.NewStore(t, append([]func(*storage.S3Options){func(o *storage.S3Options) {
		o.Endpoint = p.URL
		o.MaxBackoff = 50 * time.Millisecond
	}}, edit...)...)
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// nthOf returns a rule that applies act to the first times requests
// named op (a requestOp, optionally with "-IfNoneMatch").
func nthOf(op string, times int, act proxyAction) func(*http.Request) proxyAction {
	seen := 0
	return func(r *http.Request) proxyAction {
		name := requestOp(r)
		if r.Header.Get("If-None-Match") == "*" {
			name += "-IfNoneMatch"
		}
		if name != op || seen >= times {
			return forward
		}
		seen++
		return act
	}
}

func TestS3StoreMultipart(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) {
		o.MultipartThreshold = 5 << 20
		o.PartSize = 5 << 20
		o.Concurrency = 3
	})
	ctx := context.Background()
	data := randomBytes(12<<20+123, 1) // three parts, the last one short
	p.requests()
	if err := s.Put(ctx, "big", data); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if countOf(reqs, "UploadPart 200") != 3 || countOf(reqs, "CompleteMultipartUpload 200") != 1 || countOf(reqs, "PUT") != 0 {
		t.Fatalf("a 12 MiB put with a 5 MiB threshold made requests %q; want 3 parts", reqs)
	}
	if got, err := s.Get(ctx, "big"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get = %d bytes, %v; want the %d bytes put", len(got), err, len(data))
	}
	off := int64(5<<20 - 10) // across the first part boundary
	if got, err := s.GetRange(ctx, "big", off, 20); err != nil || !bytes.Equal(got, data[off:off+20]) {
		t.Fatalf("range across parts = %x, %v", got, err)
	}
	p.requests()
	if err := s.Put(ctx, "small", data[:5<<20]); err != nil {
		t.Fatal(err)
	}
	if reqs := p.requests(); !slices.Equal(reqs, []string{"PUT 200"}) {
		t.Fatalf("a put at the threshold made requests %q; want one PUT", reqs)
	}

	// Conditional multipart writes.
	if err := s.PutIfAbsent(ctx, "big-once", data); err != nil {
		t.Fatal(err)
	}
	other := randomBytes(6<<20, 2)
	if err := s.PutIfAbsent(ctx, "big-once", other); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second multipart put-if-absent: %v, want ErrExists", err)
	}
	if reqs := p.requests(); countOf(reqs, "AbortMultipartUpload 204") != 1 {
		t.Fatalf("the refused upload was not aborted: %q", reqs)
	}
	if got, err := s.Get(ctx, "big-once"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get after refused put = %d bytes, %v; want the first object", len(got), err)
	}
}

func TestS3StoreMultipartAbortsOnFailure(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) {
		o.MultipartThreshold = 5 << 20
		o.PartSize = 5 << 20
	})
	p.setRule(func(r *http.Request) proxyAction {
		if requestOp(r) == "UploadPart" && r.URL.Query().Get("partNumber") == "2" {
			return reject400
		}
		return forward
	})
	err := s.Put(context.Background(), "tables/1/big", randomBytes(11<<20, 3))
	if err == nil || !strings.Contains(err.Error(), `"tables/1/big"`) || !strings.Contains(err.Error(), "part 2") {
		t.Fatalf("put with a failing part: %v; want an error naming the key and the part", err)
	}
	if reqs := p.requests(); countOf(reqs, "AbortMultipartUpload 204") != 1 || countOf(reqs, "CompleteMultipartUpload") != 0 {
		t.Fatalf("requests %q; want the upload aborted, not completed", reqs)
	}
	if _, err := s.Get(context.Background(), "tables/1/big"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after a failed put: %v", err)
	}
}

func TestS3StorePagedList(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) { o.Prefix = "db" })
	ctx := context.Background()
	const n = 1234
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("tables/7/chunks/%05d", i))
	}
	keys := make(chan string)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, i := range rand.New(rand.NewPCG(4, 4)).Perm(n) {
		keys <- want[i]
	}
	close(keys)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "tables/70/x", nil); err != nil {
		t.Fatal(err)
	}
	p.requests()
	got, err := s.List(ctx, "tables/7/")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("list = %d keys (%v), want %d sorted keys without the prefix", len(got), err, n)
	}
	if reqs := p.requests(); countOf(reqs, "ListObjectsV2 200") < 2 {
		t.Fatalf("list of %d keys made requests %q; want several pages", n, reqs)
	}
	if got, err := s.List(ctx, "tables/7/chunks/0012"); err != nil || !slices.Equal(got, want[120:130]) {
		t.Fatalf("list of a narrower prefix = %q, %v", got, err)
	}
}

func TestS3StorePrefixes(t *testing.T) {
	gw := s3test.Start(t)
	ctx := context.Background()
	bucket := gw.NewBucketName()
	open := func(prefix string) *storage.S3Store {
		o := gw.Options(bucket)
		o.Prefix = prefix
		s, err := storage.NewS3Store(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, root := open("/srv/a/"), open("srv/b"), open("")
	if a.Prefix() != "srv/a/" || root.Prefix() != "" {
		t.Fatalf("prefixes %q, %q", a.Prefix(), root.Prefix())
	}
	for _, s := range []*storage.S3Store{a, b} {
		if err := s.Put(ctx, "k", []byte(s.Prefix())); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Get(ctx, "k"); err != nil || string(got) != "srv/a/" {
		t.Fatalf("a.get = %q, %v", got, err)
	}
	if keys, err := b.List(ctx, ""); err != nil || !slices.Equal(keys, []string{"k"}) {
		t.Fatalf("b.list = %q, %v", keys, err)
	}
	if keys, err := root.List(ctx, ""); err != nil || !slices.Equal(keys, []string{"srv/a/k", "srv/b/k"}) {
		t.Fatalf("the bucket holds %q, %v; want the keys under their prefixes", keys, err)
	}
}

func TestS3StoreRetries(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p)
	ctx := context.Background()
	failFirst := func(op string) {
		p.setRule(nthOf(op, 2, reject503))
		p.requests()
	}
	failFirst("PUT")
	if err := s.Put(ctx, "k", []byte("value")); err != nil {
		t.Fatalf("put through two 503s: %v", err)
	}
	failFirst("GET")
	if got, err := s.Get(ctx, "k"); err != nil || string(got) != "value" {
		t.Fatalf("get through two 503s = %q, %v", got, err)
	}
	failFirst("ListObjectsV2")
	if keys, err := s.List(ctx, ""); err != nil || !slices.Equal(keys, []string{"k"}) {
		t.Fatalf("list through two 503s = %q, %v", keys, err)
	}
	failFirst("DELETE")
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatalf("delete through two 503s: %v", err)
	}
	if reqs := p.requests(); !slices.Equal(reqs, []string{"DELETE 503", "DELETE 503", "DELETE 204"}) {
		t.Fatalf("delete made requests %q", reqs)
	}

	p.setRule(func(*http.Request) proxyAction { return reject503 })
	err := s.Put(ctx, "k2", []byte("v"))
	if err == nil || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("put against a server that always fails: %v; want an error naming the key", err)
	}
	if n := countOf(p.requests(), "PUT"); n != storage.DefaultS3MaxAttempts {
		t.Fatalf("put made %d attempts, want %d", n, storage.DefaultS3MaxAttempts)
	}
	p.setRule(func(*http.Request) proxyAction { return reject400 })
	if err := s.Put(ctx, "k3", []byte("v")); err == nil {
		t.Fatal("put refused with 400 succeeded")
	}
	if n := countOf(p.requests(), "PUT"); n != 1 {
		t.Fatalf("a 400 was retried: %d attempts", n)
	}
}

// TestS3StorePutIfAbsentLostReply checks that a conditional write whose
// reply is lost, and whose retry is then refused by the write itself,
// reports success; and that a refusal by another writer's object still
// reports ErrExists.
func TestS3StorePutIfAbsentLostReply(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) {
		o.MultipartThreshold = 5 << 20
		o.PartSize = 5 << 20
	})
	ctx := context.Background()

	p.setRule(nthOf("PUT-IfNoneMatch", 1, loseReply))
	p.requests()
	if err := s.PutIfAbsent(ctx, "v/1", []byte("mine")); err != nil {
		t.Fatalf("put-if-absent with a lost reply: %v", err)
	}
	if reqs := p.requests(); !slices.Equal(reqs, []string{"PUT-IfNoneMatch 200", "PUT-IfNoneMatch 412", "GET 200"}) {
		t.Fatalf("requests %q; want the write, then a retry refused by it, then a read-back", reqs)
	}

	if err := s.Put(ctx, "v/2", []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	p.setRule(nthOf("PUT-IfNoneMatch", 1, reject503))
	if err := s.PutIfAbsent(ctx, "v/2", []byte("mine")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("put-if-absent on another writer's object after a 503: %v, want ErrExists", err)
	}
	if got, _ := s.Get(ctx, "v/2"); string(got) != "theirs" {
		t.Fatalf("object = %q, want theirs", got)
	}

	big := randomBytes(6<<20, 5)
	p.setRule(nthOf("CompleteMultipartUpload-IfNoneMatch", 1, loseReply))
	p.requests()
	if err := s.PutIfAbsent(ctx, "v/3", big); err != nil {
		t.Fatalf("multipart put-if-absent with a lost reply: %v", err)
	}
	if reqs := p.requests(); countOf(reqs, "CompleteMultipartUpload-IfNoneMatch") != 2 {
		t.Fatalf("requests %q; want the completion retried", reqs)
	}
	if got, err := s.Get(ctx, "v/3"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get = %d bytes, %v", len(got), err)
	}
}

func TestS3StoreShortBody(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) { o.MaxAttempts = 3 })
	ctx := context.Background()
	data := randomBytes(64<<10, 6)
	if err := s.Put(ctx, "k", data); err != nil {
		t.Fatal(err)
	}
	p.setRule(nthOf("GET", 1, truncateBody))
	if got, err := s.GetRange(ctx, "k", 100, 50000); err != nil || !bytes.Equal(got, data[100:50100]) {
		t.Fatalf("range with a body cut once = %d bytes, %v; want it read again", len(got), err)
	}
	p.setRule(func(*http.Request) proxyAction { return truncateBody })
	p.requests()
	if got, err := s.Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("get with every body cut = %d bytes, %v; want an error naming the key", len(got), err)
	}
	if n := countOf(p.requests(), "GET"); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
}

func TestS3StoreBadCredentials(t *testing.T) {
	gw := s3test.Start(t)
	o := gw.Options(gw.NewBucketName())
	o.SecretKey = "wrong"
	o.MaxAttempts = 1
	if _, err := storage.NewS3Store(context.Background(), o); err == nil || !strings.Contains(err.Error(), o.Bucket) {
		t.Fatalf("open with a wrong secret: %v; want an error naming the bucket", err)
	}
	if _, err := storage.NewS3Store(context.Background(), storage.S3Options{}); err == nil {
		t.Fatal("open without a bucket succeeded")
	}
}

// TestS3StoreFetchReadsAhead fetches single rows, as an exact shuffle
// does, from a table in S3 whose ranged reads each take 20 ms: the reads
// must overlap (up to S3Options.ReadConcurrency), reuse their connections
// from one window of rows to the next, and return the right rows.
func TestS3StoreFetchReadsAhead(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	store := proxiedStore(t, gw, p, func(o *storage.S3Options) { o.ReadConcurrency = 16; o.ReadPartSize = 64 << 10 })
	db, err := storage.Open(storage.Options{InMemory: true, Store: store, FlushRows: 1 << 30, WholeChunkFetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := &storage.TableDesc{Name: "ft", Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "n", Type: types.TypInt8},
		{Name: "emb", Type: types.VectorOf(ftEmbDim), Compression: "none"},
		{Name: "note", Type: types.TypText},
	}, PrimaryKey: []int{0}, Options: storage.TableOptions{ChunkSize: 256 << 10}}
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := db.Table("ft")
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db, tbl, 0, 3000)
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	var ids []uint64
	sc, err := txn.Scan(tbl, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, part, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		ids = append(ids, part...)
	}
	sc.Close()
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })

	p.mu.Lock()
	p.rangeDelay, p.peakRanged = 20*time.Millisecond, 0
	p.mu.Unlock()
	rf, err := txn.NewRowFetcher(tbl, []int{0, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	conns := 0
	for k, part := range [][]uint64{ids[:256], ids[256:512]} {
		p.mu.Lock()
		before := p.conns
		p.mu.Unlock()
		b, got, err := rf.Fetch(part, nil)
		if err != nil || !slices.Equal(got, part) {
			t.Fatalf("fetch %d: %d of %d rows, %v", k, len(got), len(part), err)
		}
		ftCheckRows(t, b, []int{0, 2})
		p.mu.Lock()
		conns = p.conns - before
		p.mu.Unlock()
	}
	p.mu.Lock()
	peak := p.peakRanged
	p.mu.Unlock()
	if peak < 8 || peak > 16 {
		t.Fatalf("%d ranged reads in flight at once, want 8 to 16", peak)
	}
	if conns > 2 {
		t.Fatalf("the second fetch opened %d connections: the first's were not kept", conns)
	}

	// A scan reads the chunks (about 256 kB) in 64 kB parts at once.
	p.mu.Lock()
	p.rangeDelay, p.peakRanged = 5*time.Millisecond, 0
	p.mu.Unlock()
	p.requests()
	chunks := db.Stats().ChunksRead.Load()
	got, err := ftScan(t, db, tbl)
	if err != nil || len(got) != 3000 {
		t.Fatalf("scan: %d rows, %v", len(got), err)
	}
	p.mu.Lock()
	peak = p.peakRanged
	p.mu.Unlock()
	chunks = db.Stats().ChunksRead.Load() - chunks
	if n := int64(countOf(p.requests(), "GET")); peak < 4 || n < 2*chunks {
		t.Fatalf("scan: %d GETs, %d at once, for %d chunks", n, peak, chunks)
	}
}

// TestS3StoreSizedGetParts reads objects of known size in ranged parts at
// once: the bytes must come back whole and in order to progress, in as
// many GETs as parts, a part's body cut short read again, a failed part
// or a failing progress end the read with their error, and an object of
// another size than the caller's come back with its own length.
func TestS3StoreSizedGetParts(t *testing.T) {
	gw := s3test.Start(t)
	p := newFaultProxy(t, gw)
	s := proxiedStore(t, gw, p, func(o *storage.S3Options) { o.ReadPartSize = 1 << 20; o.MaxAttempts = 3 })
	ctx := context.Background()
	data := randomBytes(5<<20+123, 7)
	if err := s.Put(ctx, "obj", data); err != nil {
		t.Fatal(err)
	}
	get := func(size int64) ([]byte, []int, error) {
		var seen []int
		b, err := s.GetSizedInto(ctx, "obj", size, nil, func(read []byte) error {
			if !bytes.Equal(read, data[:min(len(read), len(data))]) {
				t.Errorf("progress saw %d bytes that differ from the object's", len(read))
			}
			seen = append(seen, len(read))
			return nil
		})
		return b, seen, err
	}
	p.requests()
	b, seen, err := get(int64(len(data)))
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("sized get: %d bytes, %v", len(b), err)
	}
	if n := countOf(p.requests(), "GET"); n != 5 {
		t.Fatalf("%d GETs for 5 parts", n)
	}
	if !slices.IsSorted(seen) || len(seen) != 5 || seen[4] != len(data) {
		t.Fatalf("progress saw %v", seen)
	}

	// Another size than the object's: its own length comes back.
	for _, size := range []int64{int64(len(data)) - 1000, int64(len(data)) + 3<<20, 10} {
		b, _, err := get(size)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if want := min(size+1, int64(len(data))); int64(len(b)) != want || !bytes.Equal(b, data[:want]) {
			t.Fatalf("size %d: %d bytes back, want the object's first %d", size, len(b), want)
		}
	}

	// A body cut short is read again; a part refused fails the read.
	p.setRule(nthOf("GET", 1, truncateBody))
	if b, _, err := get(int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("a part cut short once: %d bytes, %v", len(b), err)
	}
	p.setRule(func(r *http.Request) proxyAction {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Header.Get("Range"), "bytes=2") {
			return reject400
		}
		return forward
	})
	if _, _, err := get(int64(len(data))); err == nil || !strings.Contains(err.Error(), `"obj"`) {
		t.Fatalf("a part refused: %v; want an error naming the key", err)
	}
	p.setRule(nil)
	stop := errors.New("stop")
	calls := 0
	if _, err := s.GetSizedInto(ctx, "obj", int64(len(data)), nil, func([]byte) error {
		if calls++; calls == 2 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || calls != 2 {
		t.Fatalf("progress failing at the second part: %v after %d calls", err, calls)
	}
	if _, err := s.GetSizedInto(ctx, "missing", 100, nil, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a missing key: %v", err)
	}
}

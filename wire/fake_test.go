package wire

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
	"github.com/deeplaked/deeplaked/types"
)

// fakeEngine creates fakeSessions and counts how many are open.
type fakeEngine struct {
	open    atomic.Int64
	created atomic.Int64
	// aborts counts Session.Abort calls (after recovered panics).
	aborts atomic.Int64
	mu     sync.Mutex
	infos  []StartupInfo
	// started, if set, receives a value when a "sleep" statement begins.
	started chan struct{}
}

var _ Engine = (*fakeEngine)(nil)

func (e *fakeEngine) NewSession(info StartupInfo) (Session, error) {
	if info.Database == "nodb" {
		return nil, pgerror.Newf(pgerror.Code("3D000"), "database %q does not exist", info.Database)
	}
	e.mu.Lock()
	e.infos = append(e.infos, info)
	e.mu.Unlock()
	e.open.Add(1)
	e.created.Add(1)
	return &fakeSession{eng: e, status: session.TxIdle}, nil
}

func (e *fakeEngine) lastInfo() StartupInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.infos[len(e.infos)-1]
}

// fakeSession runs a tiny statement language, one statement per
// ';'-separated part:
//
//	select N        one int4 row "?column?" = N
//	rows N          N rows (n int8, t text), t NULL on every third row
//	error CODE MSG  fails with SQLSTATE CODE, detail and hint set
//	panic           panics
//	begin | commit | rollback | fail   moves the transaction status
//	sleep           blocks until the context is canceled
//	badbatch        writes rows before columns (a session bug)
//	badrow          writes a row whose encoding panics halfway
type fakeSession struct {
	eng    *fakeEngine
	status byte
	closed bool
	// stmts and portals are the extended protocol's, by name; a portal
	// holds its statement's query.
	stmts   map[string]*session.Prepared
	portals map[string]string
}

var _ Session = (*fakeSession)(nil)

func (s *fakeSession) TxStatus() byte { return s.status }

func (s *fakeSession) Abort() { s.eng.aborts.Add(1) }

func (s *fakeSession) Close() {
	if s.closed {
		panic("session closed twice")
	}
	s.closed = true
	s.eng.open.Add(-1)
}

func (s *fakeSession) ExecSimple(ctx context.Context, query string, w session.ResultWriter) error {
	if strings.TrimSpace(query) == "" {
		return w.WriteEmpty()
	}
	for _, stmt := range strings.Split(query, ";") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		if err := s.exec(ctx, stmt, w); err != nil {
			if s.status == session.TxActive {
				s.status = session.TxFailed
			}
			return err
		}
	}
	return nil
}

func (s *fakeSession) exec(ctx context.Context, stmt string, w session.ResultWriter) error {
	verb, arg, _ := strings.Cut(stmt, " ")
	switch strings.ToLower(verb) {
	case "select":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return pgerror.Newf(pgerror.SyntaxError, "syntax error at or near %q", arg)
		}
		if err := w.WriteColumns([]session.Column{{Name: "?column?", Type: types.TypInt4}}); err != nil {
			return err
		}
		b := types.NewBatch([]types.Type{types.TypInt4}, 1)
		b.Cols[0].AppendInt(n)
		if err := w.WriteBatch(b); err != nil {
			return err
		}
		return w.WriteComplete("SELECT 1")
	case "rows":
		n, _ := strconv.Atoi(arg)
		cols := []session.Column{
			{Name: "n", Type: types.TypInt8, TableOID: 16390, ColumnNum: 1},
			{Name: "t", Type: types.Type{Kind: types.Varchar, Width: 10}, TableOID: 16390, ColumnNum: 2},
		}
		if err := w.WriteColumns(cols); err != nil {
			return err
		}
		b := types.NewBatch([]types.Type{cols[0].Type, cols[1].Type}, types.BatchSize)
		for start := 0; start < n; start += types.BatchSize {
			b.Reset()
			for i := start; i < n && i < start+types.BatchSize; i++ {
				b.Cols[0].AppendInt(int64(i))
				if i%3 == 2 {
					b.Cols[1].AppendNull()
				} else {
					b.Cols[1].AppendString("row " + strconv.Itoa(i))
				}
			}
			if err := w.WriteBatch(b); err != nil {
				return err
			}
		}
		return w.WriteComplete("SELECT " + strconv.Itoa(n))
	case "error":
		code, msg, _ := strings.Cut(arg, " ")
		return pgerror.New(pgerror.Code(code), msg).WithDetail("detail of %s", code).WithHint("hint of %s", code)
	case "panic":
		panic("fake session panic")
	case "begin":
		s.status = session.TxActive
		return w.WriteComplete("BEGIN")
	case "commit", "rollback":
		s.status = session.TxIdle
		if strings.EqualFold(verb, "commit") {
			return w.WriteComplete("COMMIT")
		}
		return w.WriteComplete("ROLLBACK")
	case "fail":
		return pgerror.New(pgerror.DivisionByZero, "division by zero")
	case "sleep":
		if s.eng.started != nil {
			s.eng.started <- struct{}{}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return w.WriteComplete("SLEEP")
		}
	case "badrow":
		// A second column whose values do not match its type: encoding the
		// row panics after the first value is already in the buffer.
		if err := w.WriteColumns([]session.Column{{Name: "a", Type: types.TypInt4}, {Name: "b", Type: types.TypInt4}}); err != nil {
			return err
		}
		b := types.NewBatch([]types.Type{types.TypInt4, types.TypInt4}, 1)
		b.Cols[0].AppendInt(1)
		b.Cols[1].AppendString("not an int")
		return w.WriteBatch(b)
	case "badbatch":
		return w.WriteBatch(types.NewBatch([]types.Type{types.TypInt4}, 1))
	}
	return pgerror.Newf(pgerror.SyntaxError, "syntax error at or near %q", verb)
}

// syncBuffer is a bytes.Buffer safe for a logger shared by goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testServer is a Server on a loopback port with a fake engine.
type testServer struct {
	*Server
	eng  *fakeEngine
	addr string
	log  *syncBuffer
	done chan error
}

func startTestServer(t *testing.T) *testServer {
	t.Helper()
	return startTestServerOpts(t, Options{})
}

// startTestServerOpts starts a test server with opts; the logger is the
// test's own.
func startTestServerOpts(t *testing.T, opts Options) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{eng: &fakeEngine{}, addr: ln.Addr().String(), log: &syncBuffer{}, done: make(chan error, 1)}
	logger := slog.New(slog.NewTextHandler(ts.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Logger = logger
	if opts.AuthenticationTimeout == 0 {
		opts.AuthenticationTimeout = 5 * time.Second
	}
	ts.Server = NewServer(ts.eng, opts)
	go func() { ts.done <- ts.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-ts.done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ts
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The extended protocol of a fakeSession: a statement's query runs as
// ExecSimple would run it; a query starting with "error" fails at Parse.
func (s *fakeSession) Prepare(name, query string, _ []uint32) (*session.Prepared, error) {
	if strings.HasPrefix(query, "error") {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error at Parse")
	}
	if s.stmts == nil {
		s.stmts = make(map[string]*session.Prepared)
	}
	ps := &session.Prepared{Query: query}
	s.stmts[name] = ps
	return ps, nil
}

func (s *fakeSession) Statement(name string) (*session.Prepared, error) {
	ps, ok := s.stmts[name]
	if !ok {
		return nil, pgerror.Newf(pgerror.InvalidSQLStatementName, "prepared statement \"%s\" does not exist", name)
	}
	return ps, nil
}

func (s *fakeSession) CloseStatement(name string) { delete(s.stmts, name) }

func (s *fakeSession) Bind(portal, stmt string, _ []int16, _ [][]byte) (*session.Portal, error) {
	ps, err := s.Statement(stmt)
	if err != nil {
		return nil, err
	}
	if s.portals == nil {
		s.portals = make(map[string]string)
	}
	s.portals[portal] = ps.Query
	return &session.Portal{}, nil
}

func (s *fakeSession) Portal(name string) (*session.Portal, error) {
	if _, ok := s.portals[name]; !ok {
		return nil, pgerror.Newf(pgerror.InvalidCursorName, "portal \"%s\" does not exist", name)
	}
	return &session.Portal{}, nil
}

func (s *fakeSession) ClosePortal(name string) { delete(s.portals, name) }

func (s *fakeSession) Execute(ctx context.Context, portal string, _ int, w session.ResultWriter) (bool, error) {
	q, ok := s.portals[portal]
	if !ok {
		return false, pgerror.Newf(pgerror.InvalidCursorName, "portal \"%s\" does not exist", portal)
	}
	return false, s.ExecSimple(ctx, q, w)
}

func (s *fakeSession) Sync() error {
	clear(s.portals)
	return nil
}

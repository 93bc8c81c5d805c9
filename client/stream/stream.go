package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Batches is an open stream. Call Next until it returns false, then Err;
// Close ends the stream early. A Batches is used by one goroutine.
type Batches struct {
	cancel context.CancelFunc
	free   chan []byte    // buffers the reader may fill
	full   chan heldFrame // frames, aligned, in stream order
	done   chan struct{}
	held   heldFrame // the frame behind the current batch
	// area is the shared-memory area (SharedMemory), set by the reader
	// before the first frame in it and unmapped once the stream is over.
	area    *sharedArea
	sharedN int // batches that came through area
	batch   Batch
	err     error // reader's result, valid once done is closed
	tag     pgconn.CommandTag
	failed  error // a parse error or the reader's error
	closed  bool
}

// Stream starts streaming query (a SELECT or a table name) from conn with
// opts. conn is busy until Next returns false or Close returns.
func Stream(ctx context.Context, conn *pgconn.PgConn, query string, opts Options) (*Batches, error) {
	sql, err := CopySQL(query, opts)
	if err != nil {
		return nil, err
	}
	var uc *net.UnixConn
	if opts.SharedMemory != 0 {
		var ok bool
		if uc, ok = conn.Conn().(*net.UnixConn); !ok {
			return nil, fmt.Errorf("stream: SharedMemory needs a connection over the server's Unix socket, not %T", conn.Conn())
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := newBatches(cancel)
	go s.read(ctx, conn, sql, uc)
	return s, nil
}

// heldFrame is a frame handed to the consumer: in a buffer of its own
// (buf), or in the shared-memory area (shared), where the server may
// reuse it once released.
type heldFrame struct {
	frame  []byte
	buf    []byte // the reader's buffer, returned to free on release
	shared bool
	seq    uint64
}

func newBatches(cancel context.CancelFunc) *Batches {
	s := &Batches{
		cancel: cancel,
		free:   make(chan []byte, 2),
		full:   make(chan heldFrame),
		done:   make(chan struct{}),
	}
	// NB: two buffers: the consumer holds one while the reader fills the
	// other, so at most one frame is read ahead.
	s.free <- nil
	s.free <- nil
	return s
}

// frameWriter hands each Write, one whole frame, to the consumer through
// an aligned buffer, as the reader does a frame it reads from the socket.
type frameWriter struct {
	ctx context.Context
	s   *Batches
}

var _ io.Writer = (*frameWriter)(nil)

func (w *frameWriter) Write(p []byte) (int, error) {
	err := w.s.frame(w.ctx, len(p), func(dst []byte) error {
		copy(dst, p)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// frame takes a free buffer, lets fill write a frame of n bytes into it
// at a 64-byte aligned address, and hands the frame to the consumer. It
// waits while the consumer holds the other buffer.
func (s *Batches) frame(ctx context.Context, n int, fill func(dst []byte) error) error {
	var buf []byte
	select {
	case buf = <-s.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	dst := alignedBuf(&buf, n)
	if err := fill(dst); err != nil {
		s.free <- buf
		return err
	}
	select {
	case s.full <- heldFrame{frame: dst, buf: dst[:0]}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sharedFrame hands the consumer a frame in the shared-memory area. It
// takes a buffer from free as frame does, so that the reader stays at
// most one frame ahead.
func (s *Batches) sharedFrame(ctx context.Context, frame []byte, seq uint64) error {
	var buf []byte
	select {
	case buf = <-s.free:
	case <-ctx.Done():
		s.area.release(seq)
		return ctx.Err()
	}
	select {
	case s.full <- heldFrame{frame: frame, buf: buf, shared: true, seq: seq}:
		return nil
	case <-ctx.Done():
		s.area.release(seq)
		s.free <- buf
		return ctx.Err()
	}
}

// release gives the current frame back: its buffer to the reader, a
// shared one to the server.
func (s *Batches) release() {
	h := s.held
	if h.frame == nil {
		return
	}
	if h.shared {
		s.area.release(h.seq)
	}
	s.free <- h.buf
	s.held = heldFrame{}
}

// read runs the COPY on conn's socket directly (see copyReader) and hands
// each frame over. Canceling ctx (Close) interrupts the socket's reads and
// writes, which leaves the connection unusable: it is closed.
func (s *Batches) read(ctx context.Context, conn *pgconn.PgConn, sql string, uc *net.UnixConn) {
	defer close(s.done)
	if err := conn.SyncConn(ctx); err != nil {
		s.err = err
		return
	}
	nc := conn.Conn()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	r := &copyReader{nc: nc, src: nc, buf: make([]byte, stageSize)}
	if uc != nil {
		r.rr = newRightsReader(uc)
		r.src = r.rr
		defer r.rr.closeFDs()
	}
	s.tag, s.err = r.run(ctx, s, sql)
	canceled := !stop()
	if canceled || r.broken {
		// The connection is somewhere in the middle of the COPY.
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
		if s.err == nil || canceled {
			// A read the cancel interrupted failed with a deadline
			// error: the cancel is the cause.
			s.err = ctx.Err()
		}
	}
}

// Next advances to the next batch, releasing the previous one.
func (s *Batches) Next() bool {
	if s.failed != nil || s.closed {
		return false
	}
	s.release()
	select {
	case h := <-s.full:
		s.held = h
		if h.shared {
			s.sharedN++
		}
		if err := ParseFrame(h.frame, &s.batch); err != nil {
			s.failed = err
			s.stop()
			return false
		}
		return true
	case <-s.done:
		if s.err != nil {
			s.failed = s.err
		}
		s.closed = true
		s.cancel()
		s.batch = Batch{}
		s.area.unmap()
		return false
	}
}

// All returns an iterator over the remaining batches, for range loops; it
// yields the stream's error, if any, last, with a nil batch. Each batch is
// borrowed until the loop's next iteration.
func (s *Batches) All() iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		for s.Next() {
			if !yield(&s.batch, nil) {
				s.Close()
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// Batch returns the current batch, borrowed until the next call to Next or
// Close.
func (s *Batches) Batch() *Batch { return &s.batch }

// Err returns the error that ended the stream: a *pgconn.PgError for an
// error the server sent (the epoch's batches so far must be dropped), a
// frame error, or nil at a clean end.
func (s *Batches) Err() error { return s.failed }

// Rows returns the number of rows the server reports sending, once Next has
// returned false without error.
func (s *Batches) Rows() int64 { return s.tag.RowsAffected() }

// Close ends the stream, waiting for the reader. Closing before the end
// cancels the COPY, which closes the connection (pgconn's cancellation).
func (s *Batches) Close() error {
	if !s.closed {
		s.stop()
	}
	if errors.Is(s.failed, context.Canceled) {
		return nil
	}
	return s.failed
}

func (s *Batches) stop() {
	select {
	case <-s.done:
	default:
		s.cancel()
		<-s.done
	}
	s.closed = true
	s.cancel()
	s.held = heldFrame{}
	s.batch = Batch{}
	s.area.unmap()
	if s.failed == nil && s.err != nil && !errors.Is(s.err, context.Canceled) {
		s.failed = fmt.Errorf("stream: %w", s.err)
	}
}

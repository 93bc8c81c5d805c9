package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// chopWriter writes p in pieces of 1 to 300 bytes, as a socket may
// deliver them.
func chopWrite(t *testing.T, w io.Writer, rng *rand.Rand, p []byte) {
	for len(p) > 0 {
		n := min(len(p), 1+rng.IntN(300))
		if _, err := w.Write(p[:n]); err != nil {
			t.Error(err)
			return
		}
		p = p[n:]
	}
}

// fakeServer answers one Query on c with msgs, chopped into small writes.
func fakeServer(t *testing.T, c net.Conn, msgs ...pgproto3.BackendMessage) {
	defer c.Close()
	fe := pgproto3.NewBackend(c, c)
	m, err := fe.Receive()
	if err != nil {
		t.Error(err)
		return
	}
	if q, ok := m.(*pgproto3.Query); !ok || q.String != "COPY x TO STDOUT" {
		t.Errorf("got %#v, want the query", m)
		return
	}
	var out []byte
	for _, msg := range msgs {
		if out, err = msg.Encode(out); err != nil {
			t.Error(err)
			return
		}
	}
	chopWrite(t, c, rand.New(rand.NewPCG(1, 2)), out)
}

// TestCopyReader reads a COPY's answer delivered in small pieces: frames
// arrive whole and aligned, messages around them are passed over, and an
// error after a frame ends the stream with the server's error once the
// answer is read to ReadyForQuery.
func TestCopyReader(t *testing.T) {
	frame := sampleFrame()
	big := bytes.Repeat([]byte{7}, 3*stageSize+5) // bigger than the stage buffer
	notice := &pgproto3.NoticeResponse{Severity: "NOTICE", Code: "00000", Message: string(bytes.Repeat([]byte("n"), stageSize+10))}
	for _, tc := range []struct {
		name   string
		msgs   []pgproto3.BackendMessage
		frames [][]byte
		code   string
	}{{
		name: "ok",
		msgs: []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}, &pgproto3.CopyData{Data: frame}, notice,
			&pgproto3.ParameterStatus{Name: "a", Value: "b"}, &pgproto3.CopyData{Data: big}, &pgproto3.CopyDone{},
			&pgproto3.CommandComplete{CommandTag: []byte("COPY 8")}, &pgproto3.ReadyForQuery{TxStatus: 'I'}},
		frames: [][]byte{frame, big},
	}, {
		name: "error",
		msgs: []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}, &pgproto3.CopyData{Data: frame},
			&pgproto3.ErrorResponse{Severity: "ERROR", Code: "22012", Message: "division by zero"},
			&pgproto3.CopyData{Data: big}, &pgproto3.ReadyForQuery{TxStatus: 'I'}},
		frames: [][]byte{frame},
		code:   "22012",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go fakeServer(t, server, tc.msgs...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := newBatches(cancel)
			r := &copyReader{nc: client, src: client, buf: make([]byte, stageSize)}
			done := make(chan struct{})
			var tag pgconn.CommandTag
			var err error
			go func() {
				defer close(done)
				tag, err = r.run(ctx, s, "COPY x TO STDOUT")
			}()
			for i, want := range tc.frames {
				got := (<-s.full).frame
				if !bytes.Equal(got, want) {
					t.Fatalf("frame %d: %d bytes, differs from the %d sent", i, len(got), len(want))
				}
				if addr := uintptrOf(got); addr%Align != 0 {
					t.Fatalf("frame %d at %#x, not %d-byte aligned", i, addr, Align)
				}
				s.free <- got[:0]
			}
			<-done
			var pgErr *pgconn.PgError
			switch {
			case tc.code == "" && (err != nil || tag.String() != "COPY 8"):
				t.Fatalf("tag %q, err %v", tag, err)
			case tc.code != "" && (!errors.As(err, &pgErr) || pgErr.Code != tc.code):
				t.Fatalf("err %v, want %s", err, tc.code)
			}
			if r.broken {
				t.Fatal("the connection is marked broken after ReadyForQuery")
			}
		})
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

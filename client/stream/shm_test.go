package stream_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// setupUnix starts a server that also listens on a Unix socket, with a
// table of 2,000 rows of 32×32 images, and returns the DSNs of both.
func setupUnix(t *testing.T) (tcp, unix string) {
	t.Helper()
	dir := t.TempDir()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), UnixSocketDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	port := srv.Addr()[strings.LastIndexByte(srv.Addr(), ':')+1:]
	tcp = "postgres://tester@" + srv.Addr() + "/db?sslmode=disable"
	unix = fmt.Sprintf("postgres://tester@/db?host=%s&port=%s&sslmode=disable", url.QueryEscape(dir), port)
	conn := connect(t, tcp)
	defer conn.Close(context.Background())
	for _, q := range []string{
		`CREATE TABLE img (id int PRIMARY KEY, image uint8[32][32], note text)`,
		`INSERT INTO img SELECT g, ('{' || rtrim(repeat('{' || rtrim(repeat((g % 251)::text || ',', 32), ',') || '},', 32), ',') || '}')::uint8[32][32],
		        CASE WHEN g % 7 = 0 THEN NULL ELSE 'n' || g END FROM generate_series(1, 2000) g`,
	} {
		if err := conn.Exec(context.Background(), q).Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return tcp, unix
}

type streamed struct {
	ids    []int32
	images []byte
	notes  []string
	shared int
}

func streamAll(t *testing.T, conn *pgconn.PgConn, query string, opts stream.Options) streamed {
	t.Helper()
	s, err := stream.Stream(context.Background(), conn, query, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got streamed
	for s.Next() {
		b := s.Batch()
		got.ids = append(got.ids, b.Column("id").Int32()...)
		got.images = append(got.images, b.Column("image").Uint8()...)
		notes := b.Column("note")
		for i := range b.Rows {
			if notes.IsNull(i) {
				got.notes = append(got.notes, "<null>")
			} else {
				got.notes = append(got.notes, notes.String(i))
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	got.shared = stream.SharedFrames(s)
	return got
}

// TestStreamSharedMemory streams through a shared-memory area and checks
// the batches against the same stream over TCP: frames small enough
// come through the area, wrapping around it many times, and frames over
// half of it come through the socket.
func TestStreamSharedMemory(t *testing.T) {
	tcpDSN, unixDSN := setupUnix(t)
	tcp := connect(t, tcpDSN)
	defer tcp.Close(context.Background())
	uc := connect(t, unixDSN)
	defer uc.Close(context.Background())
	for _, tc := range []struct {
		name       string
		opts       stream.Options
		wantShared int
	}{
		// 31 frames of 64 rows (64 KiB of images), then one of 16 rows:
		// under 64 KiB, through the socket.
		{"in order", stream.Options{BatchSize: 64}, 31},
		{"shuffled", stream.Options{BatchSize: 100, Shuffle: true, Seed: 9}, 20},
		{"frames over half the area", stream.Options{BatchSize: 1000}, 0},
		{"frames under 64 KiB", stream.Options{BatchSize: 60}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := streamAll(t, tcp, "SELECT id, image, note FROM img", tc.opts)
			opts := tc.opts
			opts.SharedMemory = 1 << 20
			got := streamAll(t, uc, "SELECT id, image, note FROM img", opts)
			if !slices.Equal(got.ids, want.ids) || !bytes.Equal(got.images, want.images) || !slices.Equal(got.notes, want.notes) {
				t.Fatalf("the stream through shared memory differs from the one over TCP (%d and %d rows)", len(got.ids), len(want.ids))
			}
			if len(got.ids) != 2000 {
				t.Fatalf("%d rows", len(got.ids))
			}
			if got.shared != tc.wantShared {
				t.Fatalf("%d batches came through the area, want %d", got.shared, tc.wantShared)
			}
			// The connection is usable after the stream.
			if err := uc.Exec(context.Background(), "SELECT 1").Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// areasMapped counts this process's mappings and descriptors of stream
// areas: the server runs in the test's process, so both sides count.
func areasMapped(t *testing.T) (maps, fds int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	maps = bytes.Count(b, []byte("memfd:deeplaked-stream"))
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "memfd:deeplaked-stream") {
			fds++
		}
	}
	return maps, fds
}

// waitNoAreas waits until no area is mapped or open.
func waitNoAreas(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		maps, fds := areasMapped(t)
		if maps == 0 && fds == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mappings and %d descriptors of stream areas left", maps, fds)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamSharedMemoryEnds: the area is gone from both sides once a
// stream ends, is closed early, or fails midway, and the server goes on.
func TestStreamSharedMemoryEnds(t *testing.T) {
	_, unixDSN := setupUnix(t)
	opts := stream.Options{BatchSize: 64, SharedMemory: 1 << 20}

	conn := connect(t, unixDSN)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "img", opts)
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
		// The server may have sent every frame and dropped its side.
		if maps, _ := areasMapped(t); maps == 0 {
			s.Close()
			t.Fatal("during the stream: the client's mapping is missing")
		}
	}
	if err := s.Err(); err != nil || stream.SharedFrames(s) != 31 {
		t.Fatalf("err %v, %d batches through the area", err, stream.SharedFrames(s))
	}
	waitNoAreas(t)

	early := connect(t, unixDSN)
	s, err = stream.Stream(context.Background(), early, "img", opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if !s.Next() {
			t.Fatal(s.Err())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoAreas(t)

	failing := connect(t, unixDSN)
	defer failing.Close(context.Background())
	s, err = stream.Stream(context.Background(), failing, "SELECT id, image, 1 / (id - 1500) AS x FROM img", opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s.Next() {
		n++
	}
	var pgErr *pgconn.PgError
	if !errors.As(s.Err(), &pgErr) || pgErr.Code != "22012" || n == 0 {
		t.Fatalf("after %d batches: %v, want 22012", n, s.Err())
	}
	waitNoAreas(t)
	if err := failing.Exec(context.Background(), "SELECT 1").Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamSharedMemoryRefused: SHARED_MEMORY needs a Unix socket and a
// size in range.
func TestStreamSharedMemoryRefused(t *testing.T) {
	tcpDSN, unixDSN := setupUnix(t)
	tcp := connect(t, tcpDSN)
	defer tcp.Close(context.Background())
	if _, err := stream.Stream(context.Background(), tcp, "img", stream.Options{SharedMemory: 1 << 20}); err == nil {
		t.Fatal("the client asked for shared memory over TCP")
	}
	uc := connect(t, unixDSN)
	defer uc.Close(context.Background())
	for _, tc := range []struct {
		conn *pgconn.PgConn
		sql  string
		code string
	}{
		{tcp, "COPY img TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY true)", "0A000"},
		{uc, "COPY img TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY 4096)", "22023"},
		{uc, "COPY img TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY 'lots')", "22023"},
		{uc, "COPY img TO STDOUT WITH (FORMAT binary, SHARED_MEMORY true)", "0A000"},
	} {
		_, err := tc.conn.CopyTo(context.Background(), io.Discard, tc.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.sql, err, tc.code)
		}
	}
	// A client that does not take the descriptor (pgconn's COPY in the
	// extended protocol) leaves nothing behind either.
	if res := uc.ExecParams(context.Background(), "COPY img TO STDOUT WITH (FORMAT tensor, SHARED_MEMORY true)", nil, nil, nil, nil).Read(); res.Err != nil {
		t.Fatal(res.Err)
	}
	waitNoAreas(t)
}

// TestSharedMemoryOneStatement: SHARED_MEMORY holds for its own COPY, not
// for the next statement of the same query string, which gets frames, and
// an area of its own when it asks for one. The client here reads with
// plain reads (the descriptors are dropped) and releases nothing.
func TestSharedMemoryOneStatement(t *testing.T) {
	_, unixDSN := setupUnix(t)
	cfg, err := pgconn.ParseConfig(unixDSN)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "tester", "database": "db"}})
	fe.Send(&pgproto3.Query{String: "COPY img TO STDOUT (FORMAT tensor, BATCH_SIZE 64, SHARED_MEMORY 1048576); " +
		"COPY img TO STDOUT (FORMAT tensor, BATCH_SIZE 64); COPY img TO STDOUT (FORMAT tensor, BATCH_SIZE 64, SHARED_MEMORY 2097152)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var refs, frames [3]int
	var sizes [3]uint64
	stmt := -1
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyOutResponse:
			stmt++
		case *pgproto3.CopyData:
			if len(m.Data) == 40 && string(m.Data[:4]) == "DLSR" {
				refs[stmt]++
				sizes[stmt] = binary.LittleEndian.Uint64(m.Data[32:])
			} else {
				frames[stmt]++
			}
		case *pgproto3.ErrorResponse:
			t.Fatalf("%s: %s", m.Code, m.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok && stmt >= 0 {
			break
		}
	}
	// This client releases nothing: once the area is full, frames come
	// through the socket.
	if stmt != 2 || refs[0] == 0 || refs[0]+frames[0] != 32 || refs[1] != 0 || frames[1] != 32 ||
		refs[2] == 0 || refs[2]+frames[2] != 32 || sizes[0] != 1<<20 || sizes[2] != 2<<20 {
		t.Fatalf("%d statements: references %v, frames %v, areas %v", stmt+1, refs, frames, sizes)
	}
	waitNoAreas(t)
}

// TestStreamSharedMemorySlowReader: a reader slower than the server fills
// the area; the server waits for its releases rather than sending the
// frames through the socket.
func TestStreamSharedMemorySlowReader(t *testing.T) {
	_, unixDSN := setupUnix(t)
	conn := connect(t, unixDSN)
	defer conn.Close(context.Background())
	s, err := stream.Stream(context.Background(), conn, "img", stream.Options{BatchSize: 64, SharedMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for s.Next() {
		rows += s.Batch().Rows
		time.Sleep(3 * time.Millisecond)
	}
	if err := s.Err(); err != nil || rows != 2000 || stream.SharedFrames(s) != 31 {
		t.Fatalf("err %v, %d rows, %d of 32 batches through the area", err, rows, stream.SharedFrames(s))
	}
}

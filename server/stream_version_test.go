package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// slowFrames keeps each frame of a COPY and waits a little after each, so
// that writers get in between.
type slowFrames struct{ frames [][]byte }

func (s *slowFrames) Write(p []byte) (int, error) {
	s.frames = append(s.frames, append([]byte(nil), p...))
	time.Sleep(3 * time.Millisecond)
	return len(p), nil
}

// TestStreamPinnedWhileWriting streams a commit of a table while another
// session deletes, updates, inserts and vacuums it: the stream reads the
// commit's rows exactly, and names that commit in its first frame.
func TestStreamPinnedWhileWriting(t *testing.T) {
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), FlushRows: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn := connect(t, srv.Addr())
	defer conn.Close(ctx)
	const n = 20000
	mustExec(t, conn, "CREATE TABLE pin (id bigint PRIMARY KEY, v bigint)")
	mustExec(t, conn, fmt.Sprintf("INSERT INTO pin SELECT g, g * 3 FROM generate_series(0, %d) g", n-1))
	mustExec(t, conn, "VACUUM pin")
	var commit string
	if err := conn.QueryRow(ctx, "SELECT deeplake_commit('pin', 'pinned')").Scan(&commit); err != nil {
		t.Fatal(err)
	}
	writer := connect(t, srv.Addr())
	defer writer.Close(ctx)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Go(func() {
		for k := 0; !stop.Load(); k++ {
			for _, q := range []string{
				fmt.Sprintf("DELETE FROM pin WHERE id %% 97 = %d", k%97),
				fmt.Sprintf("UPDATE pin SET v = -v WHERE id %% 89 = %d", k%89),
				fmt.Sprintf("INSERT INTO pin SELECT g, 0 FROM generate_series(%d, %d) g", n+k*100, n+k*100+99),
				"VACUUM pin",
			} {
				if _, err := writer.Exec(ctx, q); err != nil {
					t.Errorf("%s: %v", q, err)
					return
				}
				writes.Add(1)
			}
		}
	})
	out := &slowFrames{}
	_, err = conn.PgConn().CopyTo(ctx, out, "COPY pin TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 250, VERSION '"+commit+"')")
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var b stream.Batch
	var buf []byte
	var ids []int64
	for i, f := range out.frames {
		if err := stream.ParseFrame(stream.AlignedCopy(&buf, f), &b); err != nil {
			t.Fatal(err)
		}
		if i == 0 && (b.Source == nil || b.Source.Commit != commit) {
			t.Fatalf("the first frame names %+v, want commit %s", b.Source, commit)
		}
		vs := b.Column("v").Int64()
		for k, id := range b.Column("id").Int64() {
			if vs[k] != id*3 {
				t.Fatalf("row %d has v %d, want %d", id, vs[k], id*3)
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) != n || ids[0] != 0 || ids[n-1] != n-1 {
		t.Fatalf("the stream read %d rows (%v ... %v)", len(ids), ids[:1], ids[len(ids)-1:])
	}
	t.Logf("%d frames, %d writes meanwhile", len(out.frames), writes.Load())
	if writes.Load() < 8 {
		t.Fatalf("only %d writes during the stream", writes.Load())
	}
}

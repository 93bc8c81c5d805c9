package scaleout

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/internal/proctest"
	"github.com/deeplaked/deeplaked/internal/s3test"
)

// TestPausedWriterKeepsItsObjects pauses server B in the middle of a large
// INSERT, after the transaction spilled its first rows into fragment
// objects (over 4 MB, storage/txn.go) and before it commits, for longer
// than three heartbeats; meanwhile server A runs VACUUM. Once B goes on
// and its INSERT is acknowledged, its rows must be readable.
//
// A takes B for dead once B's heartbeat is three heartbeats old, deems
// itself alone on the location, and deletes the objects of fragments no
// commit references, B's spilled ones among them; B, resumed, commits a
// fragment whose objects are gone: the INSERT is acknowledged, and every
// read of the table then fails with 58030 "object not found", on both
// servers. A process stalls this long when its machine is suspended or
// swapping, or its heartbeats fail to reach the storage.
func TestPausedWriterKeepsItsObjects(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	bucket := gw.NewBucketName()
	common := []string{"--storage", "s3://" + bucket + "/p", "--s3-endpoint", gw.Endpoint, "--durability", "bucket",
		"--refresh-interval", "200ms"}
	a := proctest.Start(t, nil, common...)
	b := proctest.Start(t, nil, append(common, "--attach")...)
	ctx := context.Background()
	ca := connect(t, a.DSN("postgres", "", "postgres"))
	defer ca.Close(ctx)
	cb := connect(t, b.DSN("postgres", "", "postgres"))
	defer cb.Close(ctx)
	exec(t, ca, "CREATE TABLE d (id int, s text)")
	exec(t, cb, "SELECT deeplake_refresh()")

	objects := func() int {
		f, _ := filepath.Glob(filepath.Join(gw.Dir, bucket, "p", "tables", "*", "frags", "*", "*"))
		return len(f)
	}
	const rows = 100000 // 30 MB of text
	done := make(chan error, 1)
	go func() {
		_, err := cb.Exec(ctx, "INSERT INTO d SELECT g, repeat(chr(65 + g % 26), 300) FROM generate_series(1, 100000) g")
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for objects() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the INSERT ended (%v) before it wrote an object", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the INSERT wrote no object in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Kill(b.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("B paused with %d objects of its INSERT written", objects())
	time.Sleep(4 * time.Second) // over three 1 s heartbeats
	exec(t, ca, "VACUUM d")
	t.Logf("A vacuumed: %d objects left", objects())
	if err := syscall.Kill(b.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Logf("B's INSERT failed (%v): nothing acknowledged to check", err)
		return
	}
	for name, c := range map[string]string{"A": a.DSN("postgres", "", "postgres"), "B": b.DSN("postgres", "", "postgres")} {
		conn := connect(t, c)
		exec(t, conn, "SELECT deeplake_refresh()")
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM d WHERE length(s) = 300").Scan(&n); err != nil || n != rows {
			t.Errorf("server %s, after B's INSERT of %d rows was acknowledged: %d rows, %v", name, rows, n, err)
		}
		conn.Close(ctx)
	}
}

// TestPausedReaderKeepsItsSnapshot pauses server B, whose open
// transaction has read a table, for longer than three heartbeats, while
// server A deletes rows and runs VACUUM (no retention of old versions):
// B's transaction, resumed, must go on reading its snapshot, as readers of
// older snapshots do on one server (docs/storage.md).
//
// A takes B for dead, so B's horizon no longer holds the compacted
// fragments; VACUUM deletes their objects, and B's next read in the
// transaction fails with 58030 "object not found". (A fix that ends such a
// transaction with an error saying its snapshot is gone would change what
// this test expects.)
func TestPausedReaderKeepsItsSnapshot(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	common := []string{"--storage", "s3://" + gw.NewBucketName() + "/p", "--s3-endpoint", gw.Endpoint, "--durability", "bucket",
		"--refresh-interval", "200ms", "--version-retention", "1ms"}
	a := proctest.Start(t, nil, common...)
	b := proctest.Start(t, nil, append(common, "--attach")...)
	ctx := context.Background()
	ca := connect(t, a.DSN("postgres", "", "postgres"))
	defer ca.Close(ctx)
	exec(t, ca, "CREATE TABLE d (id int, v bigint)")
	exec(t, ca, "INSERT INTO d SELECT g, g FROM generate_series(1, 50000) g")
	exec(t, ca, "VACUUM d")
	exec(t, ca, "INSERT INTO d SELECT g, g FROM generate_series(50001, 100000) g")
	exec(t, ca, "VACUUM d")
	cb := connect(t, b.DSN("postgres", "", "postgres"))
	defer cb.Close(ctx)
	exec(t, cb, "SELECT deeplake_refresh()")
	tx, err := cb.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var n, sum int64
	if err := tx.QueryRow(ctx, "SELECT count(*), sum(v) FROM d").Scan(&n, &sum); err != nil || n != 100000 {
		t.Fatalf("B's transaction reads %d rows, %v", n, err)
	}
	if err := syscall.Kill(b.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // over three 1 s heartbeats
	exec(t, ca, "DELETE FROM d WHERE id % 2 = 0")
	exec(t, ca, "VACUUM d")
	if err := syscall.Kill(b.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var n2, sum2 int64
	if err := tx.QueryRow(ctx, "SELECT count(*), sum(v) FROM d").Scan(&n2, &sum2); err != nil || n2 != n || sum2 != sum {
		t.Errorf("B's transaction, resumed after A's VACUUM: %d rows, sum %d, %v; its snapshot holds %d rows, sum %d", n2, sum2, err, n, sum)
	}
}

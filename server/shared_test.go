package server_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
	"github.com/jackc/pgx/v5"
)

func queryInt(t *testing.T, conn *pgx.Conn, q string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestServersShareBucket runs two servers on one S3 prefix, the second
// attached to the first's catalog: each serves reads and writes and sees
// the other's commits after deeplake_refresh(); a primary key inserted on
// both goes to the first commit; the shards of one stream, taken from the
// two servers, hold every row once; and after the first server's data
// directory is lost, a new one attached to the bucket serves every
// acknowledged row.
func TestServersShareBucket(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	ctx := context.Background()
	loc := "s3://" + gw.NewBucketName() + "/shared"
	optsA := server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Storage: loc, S3Endpoint: gw.Endpoint,
		Durability: "bucket", RefreshInterval: time.Hour}
	a, err := server.Start(ctx, optsA)
	if err != nil {
		t.Fatal(err)
	}
	ca := connect(t, a.Addr())
	mustExec(t, ca, "CREATE TABLE t (id int PRIMARY KEY, v int, img uint8[16])")
	copyImages(t, ca, 1, 20000, 1)

	optsB := optsA
	optsB.DataDir, optsB.Attach = t.TempDir(), true
	b, err := server.Start(ctx, optsB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb := connect(t, b.Addr())
	if n := queryInt(t, cb, "SELECT count(*) FROM t"); n != 20000 {
		t.Fatalf("the attached server counts %d rows", n)
	}
	copyImages(t, cb, 20001, 30000, -1)
	mustExec(t, ca, "DELETE FROM t WHERE id <= 100")
	mustExec(t, cb, "UPDATE t SET v = 0 WHERE id > 29900")
	// One key on both servers, the second not refreshed: 23505 there.
	copyImages(t, ca, 40000, 40000, 1)
	_, err = cb.Exec(ctx, "INSERT INTO t VALUES (40000, 2, NULL)")
	wantCode(t, err, "23505")
	// Rows buffered on each server go into fragments now, not in the
	// middle of the streams below (the shards of one stream must read
	// one layout).
	for _, srv := range []*server.Server{a, b} {
		if err := srv.DB().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*pgx.Conn{ca, cb} {
		queryInt(t, c, "SELECT deeplake_refresh()")
		if n := queryInt(t, c, "SELECT count(*) FROM t"); n != 29901 {
			t.Fatalf("%d rows after both servers' writes, want 29901", n)
		}
	}
	sumA, sumB := queryInt(t, ca, "SELECT sum(v) FROM t"), queryInt(t, cb, "SELECT sum(v) FROM t")
	if sumA != sumB {
		t.Fatalf("the servers disagree: sum %d on A, %d on B", sumA, sumB)
	}

	// The shards of one shuffled stream, rank 0 from A and rank 1 from B.
	var all []int32
	for rank, srv := range []*server.Server{a, b} {
		ids := streamImages(t, "postgres://anyone@"+srv.Addr()+"/postgres?sslmode=disable", "SELECT id, img FROM t", 16,
			stream.Options{BatchSize: 64, Shuffle: true, Seed: 7, Rank: rank, World: 2})
		if len(ids) < 14000 || len(ids) > 16000 {
			t.Fatalf("rank %d got %d rows", rank, len(ids))
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	if len(all) != 29901 || all[0] != 101 || all[len(all)-1] != 40000 || len(slices.Compact(slices.Clone(all))) != 29901 {
		t.Fatalf("the two shards hold %d rows, %d distinct, want every row once", len(all), len(slices.Compact(slices.Clone(all))))
	}

	// A's data directory is lost: a new one attached to the bucket
	// serves every acknowledged row.
	ca.Close(ctx)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(optsA.DataDir); err != nil {
		t.Fatal(err)
	}
	optsA.Attach = true
	a, err = server.Start(ctx, optsA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ca = connect(t, a.Addr())
	if n, s := queryInt(t, ca, "SELECT count(*) FROM t"), queryInt(t, ca, "SELECT sum(v) FROM t"); n != 29901 || s != sumA {
		t.Fatalf("after attaching a new data directory: %d rows, sum %d; want 29901, %d", n, s, sumA)
	}
}

// copyImages copies rows lo..hi into t: id, sign*id, and an image of all
// bytes id % 256.
func copyImages(t *testing.T, conn *pgx.Conn, lo, hi, sign int) {
	t.Helper()
	var rows bytes.Buffer
	for id := lo; id <= hi; id++ {
		v := strconv.Itoa(id % 256)
		rows.WriteString(strconv.Itoa(id) + "\t" + strconv.Itoa(sign*id) + "\t{" + strings.Repeat(v+",", 15) + v + "}\n")
	}
	if _, err := conn.PgConn().CopyFrom(context.Background(), &rows, "COPY t FROM STDIN"); err != nil {
		t.Fatal(err)
	}
}

package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
	"github.com/deeplaked/deeplaked/storage"
)

// TestS3Storage runs a server whose table data lives in an S3 bucket: the
// rows flushed there are read back after a restart, and the chunk objects
// are in the bucket under the prefix, not in the data directory.
func TestS3Storage(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	ctx := context.Background()
	bucket := gw.NewBucketName()
	opts := server.Options{
		Listen:     "127.0.0.1:0",
		DataDir:    t.TempDir(),
		Storage:    "s3://" + bucket + "/deeplaked/db1",
		S3Endpoint: gw.Endpoint,
	}
	srv, err := server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, srv.Addr())
	mustExec(t, conn, `CREATE TABLE samples (id SERIAL PRIMARY KEY, name TEXT, embedding VECTOR(3), image uint8[2][2], label INT)`)
	mustExec(t, conn, `INSERT INTO samples (name, embedding, image, label) VALUES
		('a', '[1,2,3]', '{{1,2},{3,255}}', 1),
		('b', '[4,5,6]', NULL, 2),
		(NULL, '[0,0,1]', '{{0,0},{0,0}}', NULL)`)
	if err := srv.DB().Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	want := queryText(t, conn, `SELECT * FROM samples ORDER BY id`)
	if len(want) != 3 {
		t.Fatalf("rows before restart: %q", want)
	}
	conn.Close(ctx)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	root, err := storage.NewS3Store(ctx, gw.Options(bucket))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := root.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("the bucket is empty after a flush")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "deeplaked/db1/") {
			t.Fatalf("object %q is outside the prefix", k)
		}
	}
	if local, _ := os.ReadDir(filepath.Join(opts.DataDir, "objects")); len(local) > 0 {
		t.Fatalf("chunk objects written to the data directory: %v", local)
	}

	srv, err = server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn = connect(t, srv.Addr())
	defer conn.Close(ctx)
	if got := queryText(t, conn, `SELECT * FROM samples ORDER BY id`); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after restart = %q, want %q", got, want)
	}
}

func TestStorageSpecErrors(t *testing.T) {
	for _, spec := range []string{"file:///tmp/x", "s3://", "s3:///prefix", "bucket/prefix"} {
		_, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Storage: spec})
		if err == nil || !strings.Contains(err.Error(), "s3://bucket/prefix") {
			t.Errorf("storage %q: %v; want an error saying the expected form", spec, err)
		}
	}
	_, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), S3Endpoint: "http://127.0.0.1:1"})
	if err == nil {
		t.Error("an S3 endpoint without S3 storage was accepted")
	}
}

// TestStorageMistakesRefused: the two ordinary storage mistakes are
// refused at start, with a message naming both locations, and write
// nothing: a data directory made on a bucket restarted without --storage,
// and a second data directory on the same prefix.
func TestStorageMistakesRefused(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	ctx := context.Background()
	loc := "s3://" + gw.NewBucketName() + "/t1"
	opts := server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Storage: loc, S3Endpoint: gw.Endpoint}
	srv, err := server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, srv.Addr())
	mustExec(t, conn, "CREATE TABLE t (id int PRIMARY KEY, v int)")
	mustExec(t, conn, "INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g")
	if err := srv.DB().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	bucketKeys := func() []string {
		t.Helper()
		st, err := storage.NewS3Store(ctx, gw.Options(strings.Split(loc, "/")[2]))
		if err != nil {
			t.Fatal(err)
		}
		keys, err := st.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	before := bucketKeys()

	// The forgotten flag: refused, and the data directory's own objects
	// stay empty.
	forgot := opts
	forgot.Storage, forgot.S3Endpoint = "", ""
	_, err = server.Start(ctx, forgot)
	if !errors.Is(err, storage.ErrForeignStorage) || !strings.Contains(err.Error(), "--storage "+loc) {
		t.Fatalf("without --storage: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(opts.DataDir, "objects")); len(entries) != 0 {
		t.Fatalf("the refused start wrote %d objects locally", len(entries))
	}
	// A second catalog on the prefix: refused, the bucket unchanged.
	second := opts
	second.DataDir = t.TempDir()
	_, err = server.Start(ctx, second)
	if !errors.Is(err, storage.ErrForeignStorage) || !strings.Contains(err.Error(), "already holds another catalog's data") {
		t.Fatalf("a second data directory on %s: %v", loc, err)
	}
	if after := bucketKeys(); !reflect.DeepEqual(before, after) {
		t.Fatalf("the bucket changed: %v -> %v", before, after)
	}
	// Back on its bucket, every row is there.
	srv, err = server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn = connect(t, srv.Addr())
	defer conn.Close(ctx)
	if got := queryText(t, conn, "SELECT count(*), sum(v) FROM t"); got[0][0] != "1000" || got[0][1] != "500500" {
		t.Fatalf("after the refusals: %v", got)
	}
	// A copy of the data directory, started while the server runs:
	// refused, naming the running server, the bucket unchanged but for
	// the running server's own record.
	copied := opts
	copied.DataDir = filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copied.DataDir, os.DirFS(opts.DataDir)); err != nil {
		t.Fatal(err)
	}
	before = bucketKeys()
	_, err = server.Start(ctx, copied)
	if !errors.Is(err, storage.ErrForeignStorage) || !strings.Contains(err.Error(), "is a copy of it") || !strings.Contains(err.Error(), opts.DataDir) {
		t.Fatalf("a copy of a running server's data directory: %v", err)
	}
	if after := bucketKeys(); !reflect.DeepEqual(before, after) {
		t.Fatalf("the bucket changed: %v -> %v", before, after)
	}
}

// TestS3DiskCache: with a cache directory, the second pass over a table
// on S3 reads no chunk from S3, also after a restart, when the chunks come
// from the cache's files; the rows are the same.
func TestS3DiskCache(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	ctx := context.Background()
	opts := server.Options{
		Listen:     "127.0.0.1:0",
		DataDir:    t.TempDir(),
		Storage:    "s3://" + gw.NewBucketName() + "/c1",
		S3Endpoint: gw.Endpoint,
		CacheDir:   filepath.Join(t.TempDir(), "cache"),
		CacheSize:  256 << 20,
	}
	stats := func(srv *server.Server) storage.DiskCacheStats {
		t.Helper()
		c, ok := srv.DB().Store().(interface{ Stats() storage.DiskCacheStats })
		if !ok {
			t.Fatalf("the store %T is not a disk cache", srv.DB().Store())
		}
		return c.Stats()
	}
	const scan = "SELECT * FROM t ORDER BY id"
	srv, err := server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, srv.Addr())
	mustExec(t, conn, "CREATE TABLE t (id int PRIMARY KEY, v int8, s text, emb vector(8))")
	mustExec(t, conn, "INSERT INTO t SELECT g, g * 3, 'row ' || g, '[1,2,3,4,5,6,7,8]' FROM generate_series(1, 20000) g")
	if err := srv.DB().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	first := stats(srv)
	want := queryText(t, conn, scan)
	if len(want) != 20000 {
		t.Fatalf("%d rows", len(want))
	}
	cold := stats(srv)
	if cold.Misses == first.Misses {
		t.Fatalf("the first scan read no chunk from S3: %+v -> %+v", first, cold)
	}
	if got := queryText(t, conn, scan); !reflect.DeepEqual(got, want) {
		t.Fatal("the second scan's rows differ")
	}
	if warm := stats(srv); warm.Misses != cold.Misses {
		t.Fatalf("the second scan read chunks from S3: %+v -> %+v", cold, warm)
	}
	conn.Close(ctx)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	// A start that fails (a second catalog on the prefix) leaves the
	// cache directory free for the next.
	second := opts
	second.DataDir = t.TempDir()
	if _, err := server.Start(ctx, second); !errors.Is(err, storage.ErrForeignStorage) {
		t.Fatalf("a second data directory on the prefix: %v", err)
	}

	// After a restart nothing is decoded in memory: the chunks come
	// from the files.
	srv, err = server.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn = connect(t, srv.Addr())
	defer conn.Close(ctx)
	reopened := stats(srv)
	if reopened.Files != cold.Misses-first.Misses {
		t.Fatalf("after the restart the cache holds %d files; the first scan read %d chunks from S3", reopened.Files, cold.Misses-first.Misses)
	}
	if got := queryText(t, conn, scan); !reflect.DeepEqual(got, want) {
		t.Fatal("the rows read from the cache differ")
	}
	after := stats(srv)
	if after.Misses != 0 || after.Hits < reopened.Files || after.Corrupt != 0 {
		t.Fatalf("the scan after the restart: %+v (the cache holds %d files)", after, reopened.Files)
	}
}

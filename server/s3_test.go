package server_test

import (
	"context"
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

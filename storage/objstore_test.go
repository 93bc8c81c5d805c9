package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

func TestObjectStores(t *testing.T) {
	dir := t.TempDir()
	ds, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]ObjectStore{"mem": NewMemStore(), "dir": ds} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := s.Get(ctx, "tables/1/a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get missing: %v", err)
			}
			if _, err := s.GetRange(ctx, "tables/1/a", 0, 1); !errors.Is(err, ErrNotFound) {
				t.Fatalf("range missing: %v", err)
			}
			data := []byte("0123456789")
			for _, k := range []string{"tables/1/a", "tables/1/b", "tables/2/a", "other"} {
				if err := s.Put(ctx, k, data); err != nil {
					t.Fatal(err)
				}
			}
			data[0] = 'X' // the store keeps its own copy
			if got, err := s.Get(ctx, "tables/1/a"); err != nil || string(got) != "0123456789" {
				t.Fatalf("get = %q, %v", got, err)
			}
			for _, tc := range []struct {
				off, n int64
				want   string
			}{{0, 3, "012"}, {7, 10, "789"}, {10, 1, ""}, {4, -1, "456789"}} {
				got, err := s.GetRange(ctx, "tables/1/a", tc.off, tc.n)
				if err != nil || !bytes.Equal(got, []byte(tc.want)) {
					t.Errorf("range(%d, %d) = %q, %v; want %q", tc.off, tc.n, got, err, tc.want)
				}
			}
			keys, err := s.List(ctx, "tables/1/")
			if err != nil || !reflect.DeepEqual(keys, []string{"tables/1/a", "tables/1/b"}) {
				t.Fatalf("list = %v, %v", keys, err)
			}
			if err := s.Put(ctx, "tables/1/a", []byte("new")); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Get(ctx, "tables/1/a"); string(got) != "new" {
				t.Fatalf("overwrite: %q", got)
			}
			if err := s.Delete(ctx, "tables/1/a"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "tables/1/a"); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := s.Get(ctx, "tables/1/a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get deleted: %v", err)
			}
			keys, _ = s.List(ctx, "")
			if !reflect.DeepEqual(keys, []string{"other", "tables/1/b", "tables/2/a"}) {
				t.Fatalf("list all = %v", keys)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Put(cctx, "x", nil); !errors.Is(err, context.Canceled) {
				t.Fatalf("put with canceled context: %v", err)
			}
		})
	}
	// A leftover temporary file of an interrupted Put is not an object.
	if err := os.WriteFile(filepath.Join(dir, "tables", "2", "b.123"+tmpSuffix), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if keys, _ := ds.List(context.Background(), "tables/2/"); !reflect.DeepEqual(keys, []string{"tables/2/a"}) {
		t.Fatalf("list with temp file = %v", keys)
	}
	if err := ds.Put(context.Background(), "../escape", nil); err == nil {
		t.Fatal("key escaping the directory accepted")
	}
}

func TestDirStoreGetInto(t *testing.T) {
	d, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Put(ctx, "a/b", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := []byte("x")
	got, err := d.GetInto(ctx, "a/b", buf, nil)
	if err != nil || string(got) != "xhello" {
		t.Fatalf("GetInto = %q, %v", got, err)
	}
	big := make([]byte, 0, 64)
	got, err = d.GetInto(ctx, "a/b", big, nil)
	if err != nil || string(got) != "hello" || &got[0] != &big[:1][0] {
		t.Fatalf("GetInto did not reuse the buffer: %q, %v", got, err)
	}
	if _, err := d.GetInto(ctx, "nope", nil, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

// TestDirStoreKeepsFilesOpen reads byte ranges of more objects than a
// DirStore keeps open, while other goroutines replace and delete objects:
// every read must return the object's current bytes (or ErrNotFound once
// it is deleted), the open files stay bounded, and Close closes them.
func TestDirStoreKeepsFilesOpen(t *testing.T) {
	ctx := context.Background()
	ds, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds.files.max = 64
	objects := ds.files.max + 20
	key := func(i int) string { return fmt.Sprintf("t/%03d", i) }
	body := func(i, gen int) []byte { return bytes.Repeat([]byte{byte(i), byte(gen)}, 512) }
	for i := range objects {
		if err := ds.Put(ctx, key(i), body(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range objects {
			got, err := ds.GetRange(ctx, key(i), 10, 6)
			if err != nil || !bytes.Equal(got, body(i, 0)[10:16]) {
				t.Fatalf("round %d, object %d: % x, %v", round, i, got, err)
			}
		}
	}
	if n := ds.files.open(); n == 0 || n > ds.files.max {
		t.Fatalf("%d files open, want 1 to %d", n, ds.files.max)
	}
	// Replaced and deleted while read.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := range 200 {
				i := (w*53 + k*7) % objects
				got, err := ds.GetRange(ctx, key(i), 0, 2)
				if err != nil && !errors.Is(err, ErrNotFound) || err == nil && (len(got) != 2 || got[0] != byte(i)) {
					t.Errorf("object %d: % x, %v", i, got, err)
					return
				}
			}
		})
	}
	for i := range 10 {
		if err := ds.Put(ctx, key(i), body(i, 1)); err != nil {
			t.Fatal(err)
		}
		if err := ds.Delete(ctx, key(objects-1-i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i := range 10 {
		if got, err := ds.GetRange(ctx, key(i), 0, 2); err != nil || !bytes.Equal(got, body(i, 1)[:2]) {
			t.Fatalf("replaced object %d: % x, %v", i, got, err)
		}
		if _, err := ds.GetRange(ctx, key(objects-1-i), 0, 2); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted object %d: %v, want ErrNotFound", objects-1-i, err)
		}
	}
	if got, err := ds.GetRange(ctx, key(20), 1020, 100); err != nil || len(got) != 4 {
		t.Fatalf("a range past the end: %d bytes, %v", len(got), err)
	}
	ds.Close()
	if n := ds.files.open(); n != 0 {
		t.Fatalf("%d files open after Close", n)
	}
	if got, err := ds.GetRange(ctx, key(30), 0, 2); err != nil || !bytes.Equal(got, body(30, 0)[:2]) {
		t.Fatalf("after Close: % x, %v", got, err)
	}
}

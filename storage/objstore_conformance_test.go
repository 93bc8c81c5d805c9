package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/storage"
)

// TestObjectStoreConformance runs one behavioural suite over every
// ObjectStore, so that the local directory, memory and S3 behave alike.
func TestObjectStoreConformance(t *testing.T) {
	gw := s3test.Start(t)
	stores := []struct {
		name string
		open func(t *testing.T) storage.ObjectStore
	}{
		{"mem", func(*testing.T) storage.ObjectStore { return storage.NewMemStore() }},
		{"dir", func(t *testing.T) storage.ObjectStore {
			s, err := storage.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"s3", func(t *testing.T) storage.ObjectStore { return gw.NewStore(t) }},
		{"s3-prefix", func(t *testing.T) storage.ObjectStore {
			return gw.NewStore(t, func(o *storage.S3Options) { o.Prefix = "db/one" })
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Run("missing", func(t *testing.T) { testMissing(t, st.open(t)) })
			t.Run("round-trip", func(t *testing.T) { testRoundTrip(t, st.open(t)) })
			t.Run("range", func(t *testing.T) { testRange(t, st.open(t)) })
			t.Run("list-delete", func(t *testing.T) { testListDelete(t, st.open(t)) })
			t.Run("put-if-absent", func(t *testing.T) { testPutIfAbsent(t, st.open(t)) })
			t.Run("put-if-absent-race", func(t *testing.T) { testPutIfAbsentRace(t, st.open(t)) })
		})
	}
}

func testMissing(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	const key = "tables/1/missing"
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s of a missing key: %v, want ErrNotFound", what, err)
		} else if !strings.Contains(err.Error(), key) {
			t.Errorf("%s error %q does not name the key", what, err)
		}
	}
	_, err := s.Get(ctx, key)
	check("get", err)
	for _, r := range [][2]int64{{0, 1}, {5, -1}, {0, 0}, {-1, 4}} {
		_, err = s.GetRange(ctx, key, r[0], r[1])
		check(fmt.Sprintf("range(%d, %d)", r[0], r[1]), err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Errorf("delete of a missing key: %v", err)
	}
	if keys, err := s.List(ctx, "tables/"); err != nil || len(keys) != 0 {
		t.Errorf("list of an empty store = %v, %v", keys, err)
	}
}

func testRoundTrip(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	keys := []string{"tables/1/chunks/0000000000000001", "tables/1/v/00000001.manifest",
		"odd key/with+plus=eq%25&amp;ü", "empty"}
	for _, k := range keys {
		v := data
		if k == "empty" {
			v = nil
		}
		if err := s.Put(ctx, k, v); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	want := append([]byte(nil), data...)
	data[0]++ // the store keeps its own copy
	for _, k := range keys[:3] {
		if got, err := s.Get(ctx, k); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("get %q = %d bytes, %v", k, len(got), err)
		}
	}
	if got, err := s.Get(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("get empty object = %q, %v", got, err)
	}
	if err := s.Put(ctx, keys[0], []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, keys[0]); err != nil || string(got) != "new" {
		t.Fatalf("get after overwrite = %q, %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cctx, "canceled", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("put with a canceled context: %v", err)
	}
}

func testRange(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	if err := s.Put(ctx, "r/obj", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "r/empty", nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key    string
		off, n int64
		want   string
	}{
		{"r/obj", 0, 3, "012"},
		{"r/obj", 3, 4, "3456"},    // middle
		{"r/obj", 7, 10, "789"},    // past the end: the bytes that exist
		{"r/obj", 9, 1, "9"},       // last byte
		{"r/obj", 10, 1, ""},       // at the end
		{"r/obj", 12, 3, ""},       // after the end
		{"r/obj", 4, -1, "456789"}, // to the end
		{"r/obj", 0, -1, "0123456789"},
		{"r/obj", 10, -1, ""},
		{"r/obj", 2, 0, ""},
		{"r/empty", 0, 5, ""},
		{"r/empty", 0, -1, ""},
	} {
		got, err := s.GetRange(ctx, tc.key, tc.off, tc.n)
		if err != nil || string(got) != tc.want {
			t.Errorf("range(%s, %d, %d) = %q, %v; want %q", tc.key, tc.off, tc.n, got, err, tc.want)
		}
	}
}

func testListDelete(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	for _, k := range []string{"tables/2/a", "tables/1/b", "tables/10/a", "tables/1/a", "other"} {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string, want ...string) {
		t.Helper()
		keys, err := s.List(ctx, prefix)
		if err != nil || !reflect.DeepEqual(keys, want) && len(keys)+len(want) > 0 {
			t.Fatalf("list(%q) = %q, %v; want %q", prefix, keys, err, want)
		}
	}
	list("tables/1/", "tables/1/a", "tables/1/b")
	list("tables/1", "tables/1/a", "tables/1/b", "tables/10/a")
	list("", "other", "tables/1/a", "tables/1/b", "tables/10/a", "tables/2/a")
	list("nothing/")
	for _, k := range []string{"tables/1/a", "tables/1/a", "tables/9/never"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("delete %q: %v", k, err)
		}
	}
	if _, err := s.Get(ctx, "tables/1/a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	list("tables/1/", "tables/1/b")
}

func testPutIfAbsent(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	const key = "tables/1/v/00000002.manifest"
	if err := s.PutIfAbsent(ctx, key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"second", "first"} {
		err := s.PutIfAbsent(ctx, key, []byte(data))
		if !errors.Is(err, storage.ErrExists) || !strings.Contains(err.Error(), key) {
			t.Fatalf("put-if-absent %q on a taken key: %v, want ErrExists naming the key", data, err)
		}
	}
	if got, err := s.Get(ctx, key); err != nil || string(got) != "first" {
		t.Fatalf("get = %q, %v; the refused writes changed the object", got, err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, key, []byte("again")); err != nil {
		t.Fatalf("put-if-absent after delete: %v", err)
	}
}

// testPutIfAbsentRace has writers race on one key: exactly one wins, the
// others get ErrExists and the object holds the winner's bytes.
func testPutIfAbsentRace(t *testing.T, s storage.ObjectStore) {
	ctx := context.Background()
	const writers, rounds = 12, 4
	for r := range rounds {
		key := fmt.Sprintf("race/%d", r)
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[w] = s.PutIfAbsent(ctx, key, fmt.Appendf(nil, "writer %d of round %d", w, r))
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won", r, winner, w)
			case err == nil:
				winner = w
			case !errors.Is(err, storage.ErrExists):
				t.Fatalf("round %d: writer %d: %v", r, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", r)
		}
		got, err := s.Get(ctx, key)
		if want := fmt.Sprintf("writer %d of round %d", winner, r); err != nil || string(got) != want {
			t.Fatalf("round %d: object = %q, %v; want the winner's %q", r, got, err, want)
		}
	}
}

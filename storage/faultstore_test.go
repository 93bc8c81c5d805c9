package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/storage"
)

func hasPrefix(p string) func(string) bool {
	return func(k string) bool { return strings.HasPrefix(k, p) }
}

func TestFaultStoreSelectsCalls(t *testing.T) {
	ctx := context.Background()
	fs := storage.NewFaultStore(storage.NewMemStore(), 1)
	for _, k := range []string{"a/1", "b/1"} {
		if err := fs.Put(ctx, k, []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	in := fs.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectGet, storage.ObjectList}, Key: hasPrefix("a/"), Err: storage.ErrInjected})
	_, err := fs.Get(ctx, "a/1")
	if !errors.Is(err, storage.ErrInjected) || !strings.Contains(err.Error(), `get "a/1"`) {
		t.Fatalf("get a/1: %v; want the injected error naming the operation and key", err)
	}
	if _, err := fs.List(ctx, "a/"); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("list a/: %v", err)
	}
	if _, err := fs.Get(ctx, "b/1"); err != nil {
		t.Fatalf("get of a key the fault does not select: %v", err)
	}
	if _, err := fs.GetRange(ctx, "a/1", 0, 2); err != nil {
		t.Fatalf("get-range, an operation the fault does not select: %v", err)
	}
	if keys, err := fs.List(ctx, ""); err != nil || len(keys) != 2 {
		t.Fatalf("list of a prefix the fault does not select = %v, %v", keys, err)
	}
	if in.Fired() != 2 {
		t.Fatalf("fired %d times, want 2", in.Fired())
	}
	in.Remove()
	if _, err := fs.Get(ctx, "a/1"); err != nil {
		t.Fatalf("get after Remove: %v", err)
	}
}

func TestFaultStoreEveryNthAndTimes(t *testing.T) {
	ctx := context.Background()
	fs := storage.NewFaultStore(storage.NewMemStore(), 1)
	nth := fs.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectPut}, EveryNth: 3, Err: storage.ErrInjected})
	var failed []int
	for i := 1; i <= 9; i++ {
		if err := fs.Put(ctx, "k", nil); err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 3 || failed[0] != 3 || failed[1] != 6 || failed[2] != 9 || nth.Fired() != 3 {
		t.Fatalf("every 3rd put failed: calls %v (fired %d), want [3 6 9]", failed, nth.Fired())
	}
	fs.Clear()
	limited := fs.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectDelete}, Times: 2, Err: storage.ErrInjected})
	n := 0
	for range 5 {
		if fs.Delete(ctx, "k") != nil {
			n++
		}
	}
	if n != 2 || limited.Fired() != 2 {
		t.Fatalf("a fault limited to 2 times failed %d calls", n)
	}
}

func TestFaultStoreProbabilityIsSeeded(t *testing.T) {
	ctx := context.Background()
	pattern := func(seed uint64) string {
		fs := storage.NewFaultStore(storage.NewMemStore(), seed)
		fs.Inject(storage.Fault{Prob: 0.3, Err: storage.ErrInjected})
		var b strings.Builder
		for range 200 {
			if fs.Put(ctx, "k", nil) != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	p1, p2, other := pattern(7), pattern(7), pattern(8)
	if p1 != p2 {
		t.Fatalf("the same seed gave different faults:\n%s\n%s", p1, p2)
	}
	if p1 == other {
		t.Fatal("different seeds gave the same faults")
	}
	if n := strings.Count(p1, "x"); n < 30 || n > 90 {
		t.Fatalf("%d of 200 calls failed with probability 0.3", n)
	}
}

func TestFaultStoreAfterCall(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemStore()
	fs := storage.NewFaultStore(mem, 1)
	fs.Inject(storage.Fault{Key: hasPrefix("lost/"), Err: storage.ErrInjected, AfterCall: true})
	fs.Inject(storage.Fault{Key: hasPrefix("refused/"), Err: storage.ErrInjected})
	for _, k := range []string{"lost/1", "refused/1"} {
		if err := fs.PutIfAbsent(ctx, k, []byte("v")); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("put-if-absent %s: %v", k, err)
		}
	}
	if got, err := mem.Get(ctx, "lost/1"); err != nil || string(got) != "v" {
		t.Fatalf("a write whose reply was lost did not land: %q, %v", got, err)
	}
	if _, err := fs.Inner().Get(ctx, "refused/1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused write landed: %v", err)
	}
}

func TestFaultStoreShortRead(t *testing.T) {
	ctx := context.Background()
	fs := storage.NewFaultStore(storage.NewMemStore(), 1)
	if err := fs.Put(ctx, "k", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	in := fs.Inject(storage.Fault{ShortRead: true, EveryNth: 2})
	for i, want := range []string{"0123456789", "01234", "0123456789", "01234"} {
		if got, err := fs.Get(ctx, "k"); err != nil || string(got) != want {
			t.Fatalf("get #%d = %q, %v; want %q", i+1, got, err, want)
		}
	}
	in.Remove()
	fs.Inject(storage.Fault{ShortRead: true})
	if got, err := fs.GetRange(ctx, "k", 2, 6); err != nil || string(got) != "234" {
		t.Fatalf("short range = %q, %v; want %q", got, err, "234")
	}
}

func TestFaultStoreDelay(t *testing.T) {
	fs := storage.NewFaultStore(storage.NewMemStore(), 1)
	fs.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectPut}, Delay: 50 * time.Millisecond})
	start := time.Now()
	if err := fs.Put(context.Background(), "k", nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("put took %v, want at least the 50ms delay", d)
	}
	fs.Inject(storage.Fault{Ops: []storage.ObjectOp{storage.ObjectPut}, Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := fs.Put(ctx, "k", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a delay past the deadline: %v", err)
	}
}

func TestFaultStoreConforms(t *testing.T) {
	// With no faults a FaultStore is its inner store.
	open := func() storage.ObjectStore { return storage.NewFaultStore(storage.NewMemStore(), 1) }
	testMissing(t, open())
	testRange(t, open())
	testListDelete(t, open())
	testPutIfAbsent(t, open())
}

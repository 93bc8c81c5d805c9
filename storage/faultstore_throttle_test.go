package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestFaultStoreThrottle: a throttled read waits len/BytesPerSecond, each
// call for itself (concurrent calls are not queued behind each other), for
// the bytes it returns.
func TestFaultStoreThrottle(t *testing.T) {
	ctx := context.Background()
	fs := NewFaultStore(NewMemStore(), 1)
	if err := fs.Put(ctx, "k", make([]byte, 1_000_000)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var slept []time.Duration
	fs.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		return ctx.Err()
	}
	fs.Inject(Fault{Ops: []ObjectOp{ObjectGet, ObjectGetRange}, BytesPerSecond: 1e6})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if data, err := fs.Get(ctx, "k"); err != nil || len(data) != 1_000_000 {
				t.Errorf("get = %d bytes, %v", len(data), err)
			}
		})
	}
	wg.Wait()
	if _, err := fs.GetRange(ctx, "k", 0, 250_000); err != nil {
		t.Fatal(err)
	}
	if err := fs.Put(ctx, "k2", make([]byte, 1_000_000)); err != nil {
		t.Fatal(err)
	}
	if len(slept) != 5 {
		t.Fatalf("%d throttled waits %v, want 4 gets and 1 range read (writes are not throttled)", len(slept), slept)
	}
	// Each call waits for its own bytes, less the time it took: about a
	// second for each get (not 1, 2, 3, 4 s as one shared rate would
	// give), a quarter for the range.
	for i, want := range []time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second / 4} {
		if d := slept[i]; d > want || d < want/2 {
			t.Errorf("wait %d = %v, want about %v", i, d, want)
		}
	}

	// Of two throttles the slower holds, and a short read is throttled
	// for the bytes it returns.
	slept = nil
	fs.Clear()
	fs.Inject(Fault{BytesPerSecond: 1e6})
	fs.Inject(Fault{BytesPerSecond: 5e5, ShortRead: true})
	if data, err := fs.Get(ctx, "k"); err != nil || len(data) != 500_000 {
		t.Fatalf("short get = %d bytes, %v", len(data), err)
	}
	if len(slept) != 1 || slept[0] > time.Second || slept[0] < time.Second/2 {
		t.Fatalf("waits %v, want one of about 1s (500 kB at 500 kB/s)", slept)
	}

	if got := throttleDelay(88_000_000, 88e6, 300*time.Millisecond); got != 700*time.Millisecond {
		t.Fatalf("throttleDelay = %v, want 700ms", got)
	}

	// The real wait: at least the transfer's time, cut short by the
	// context.
	fs.sleep = sleepCtx
	fs.Clear()
	fs.Inject(Fault{BytesPerSecond: 1e6})
	start := time.Now()
	if _, err := fs.GetRange(ctx, "k", 0, 50_000); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("50 kB at 1 MB/s took %v, want at least 50ms", d)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := fs.Get(cctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a throttled get past the deadline: %v", err)
	}
}

package stream

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackpressure checks that the reader copies at most one frame ahead of
// a consumer that holds a batch.
func TestBackpressure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newBatches(cancel)
	w := &frameWriter{ctx: ctx, s: s}
	frame := sampleFrame()
	var written atomic.Int32
	go func() {
		defer close(s.done)
		for i := 0; i < 5; i++ {
			if _, err := w.Write(frame); err != nil {
				s.err = err
				return
			}
			written.Add(1)
		}
	}()
	if !s.Next() {
		t.Fatal(s.Err())
	}
	time.Sleep(50 * time.Millisecond)
	// The first Write returned when Next took its frame; the second has
	// copied its frame and waits to hand it over.
	if n := written.Load(); n != 1 {
		t.Fatalf("%d writes returned while the consumer holds a batch, want 1", n)
	}
	got := 1
	for s.Next() {
		got++
	}
	if s.Err() != nil || got != 5 {
		t.Fatalf("%d batches, err %v", got, s.Err())
	}
}

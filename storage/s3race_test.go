package storage_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/storage"
)

// TestS3PutIfAbsentRace: of many concurrent put-if-absent calls on one
// key, through separate clients, exactly one succeeds; the object is the
// winner's. The shared log relies on it.
func TestS3PutIfAbsentRace(t *testing.T) {
	gw := s3test.Start(t)
	bucket := gw.NewBucketName()
	ctx := context.Background()
	var stores []*storage.S3Store
	for range 8 {
		s, err := storage.NewS3Store(ctx, gw.Options(bucket))
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	for round := range 50 {
		key := fmt.Sprintf("k%d", round)
		var won atomic.Int32
		var winner atomic.Int32
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				err := s.PutIfAbsent(ctx, key, []byte(fmt.Sprint(i)))
				if err == nil {
					won.Add(1)
					winner.Store(int32(i))
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("round %d: %d of %d concurrent put-if-absent calls succeeded", round, won.Load(), len(stores))
		}
		got, err := stores[0].Get(ctx, key)
		if err != nil || string(got) != fmt.Sprint(winner.Load()) {
			t.Fatalf("round %d: object %q, %v; the winner was %d", round, got, err, winner.Load())
		}
	}
}

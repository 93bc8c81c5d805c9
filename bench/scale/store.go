package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deeplaked/deeplaked/storage"
)

// partStore is a model of storage.S3Store's reads over a throttled store
// (storage.FaultStore with Fault.BytesPerSecond, each call a connection at
// S3's rate): a chunk whose size the scan knows is read as S3Store's
// GetSizedInto reads it, in parts of about part bytes, up to conc at once,
// each a GetRange of the inner store, progress called in order as the
// parts complete; ReadConcurrency is conc, as S3Options.ReadConcurrency.
// It counts the reads of chunks and the most reads it had in flight.
type partStore struct {
	storage.ObjectStore
	part int64
	conc int

	gets, inFlight, peak atomic.Int64
}

func newPartStore(inner storage.ObjectStore, part int64, conc int) *partStore {
	return &partStore{ObjectStore: inner, part: part, conc: conc}
}

// ReadConcurrency is what storage reads as the store's reads in flight.
func (s *partStore) ReadConcurrency() int { return s.conc }

// Get counts the read.
func (s *partStore) Get(ctx context.Context, key string) ([]byte, error) {
	defer s.enter(key)()
	return s.ObjectStore.Get(ctx, key)
}

// GetRange counts the read.
func (s *partStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	defer s.enter(key)()
	return s.ObjectStore.GetRange(ctx, key, off, n)
}

func (s *partStore) enter(key string) func() {
	if strings.Contains(key, "/frags/") {
		s.gets.Add(1)
	}
	n := s.inFlight.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	return func() { s.inFlight.Add(-1) }
}

// GetSizedInto reads the object of size bytes as S3Store does: size+1
// bytes asked for, in parts, conc at once.
func (s *partStore) GetSizedInto(ctx context.Context, key string, size int64, buf []byte, progress func(read []byte) error) ([]byte, error) {
	want := size + 1
	nparts := max(1, (want+s.part/2)/s.part)
	part := (want + nparts - 1) / nparts
	if int64(cap(buf)) < want {
		buf = make([]byte, want)
	}
	buf = buf[:want]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make([]int, nparts)
	errs := make([]error, nparts)
	done := make([]chan struct{}, nparts)
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, min(int(nparts), s.conc))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range int(nparts) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for ; i < int(nparts); i++ {
					errs[i] = ctx.Err()
					close(done[i])
				}
				return
			}
			lo := int64(i) * part
			hi := min(lo+part, want)
			wg.Go(func() {
				defer func() {
					<-sem
					close(done[i])
				}()
				b, err := s.GetRange(ctx, key, lo, hi-lo)
				got[i], errs[i] = copy(buf[lo:hi], b), err
			})
		}
	})
	n := int64(0)
	var err error
	for i := range int(nparts) {
		<-done[i]
		if err = errs[i]; err != nil {
			break
		}
		n += int64(got[i])
		if progress != nil {
			if err = progress(buf[:n]); err != nil {
				break
			}
		}
		if n < min(int64(i+1)*part, want) {
			break // the object ends here
		}
	}
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

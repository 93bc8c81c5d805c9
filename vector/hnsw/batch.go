package hnsw

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// AddBatch inserts len(ids) vectors, vecs holding them back to back
// (len(vecs) == len(ids)*Dim), on workers goroutines (GOMAXPROCS when
// workers <= 0). Under Cosine zero vectors are skipped, as pgvector skips
// them. It returns the first error met, after which the remaining rows may or
// may not have been inserted. A parallel build does not give the same graph
// on every run, only one of the same quality.
func (x *Index) AddBatch(ids []uint64, vecs []float32, workers int) error {
	d := x.cfg.Dim
	if len(vecs) != len(ids)*d {
		return fmt.Errorf("%w: %d floats for %d rows of %d", ErrDimension, len(vecs), len(ids), d)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(ids)/64))
	x.Reserve(len(ids))

	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	const chunk = 16
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(ids) {
					return
				}
				for i := lo; i < min(lo+chunk, len(ids)); i++ {
					err := x.Add(ids[i], vecs[i*d:(i+1)*d])
					if err != nil && !errors.Is(err, ErrZeroVector) {
						errOnce.Do(func() { first = err })
						failed.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}

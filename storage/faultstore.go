package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrInjected is a ready-made error for Fault.Err.
var ErrInjected = errors.New("storage: injected fault")

// ObjectOp names an ObjectStore operation, for Fault.Ops.
type ObjectOp uint8

// The ObjectStore operations.
const (
	ObjectPut ObjectOp = iota + 1
	ObjectPutIfAbsent
	ObjectGet
	ObjectGetRange
	ObjectDelete
	ObjectList
)

var objectOpNames = [...]string{ObjectPut: "put", ObjectPutIfAbsent: "put-if-absent", ObjectGet: "get",
	ObjectGetRange: "get-range", ObjectDelete: "delete", ObjectList: "list"}

func (o ObjectOp) String() string {
	if int(o) < len(objectOpNames) && objectOpNames[o] != "" {
		return objectOpNames[o]
	}
	return fmt.Sprintf("ObjectOp(%d)", o)
}

// Fault says which calls of a FaultStore misbehave and how.
//
// A call matches when its operation is in Ops (all operations if Ops is
// empty) and Key accepts its key (List passes its prefix; nil accepts
// all). Of the matching calls the fault fires on every EveryNth one
// (counting from 1: EveryNth 3 fires on the 3rd, 6th, ...), else with
// probability Prob, else on every one, and at most Times times when Times
// is positive. When it fires it does each of the things set:
//
//   - Delay: sleeps first (the call's context cuts the sleep short).
//   - Err: the call fails with an error wrapping Err. The inner store is
//     not called, unless AfterCall is set: then the call is made and its
//     result replaced by the error, like a write whose reply was lost.
//   - ShortRead: Get and GetRange return only the first half of the bytes
//     (len/2), as a transfer cut short would.
//   - BytesPerSecond: Get and GetRange take at least len/BytesPerSecond
//     seconds, the call's own time included: each call is a transfer at
//     that rate, whatever else runs, as each connection to S3 carries
//     about 85-90 MB/s. Of several throttles that fire, the slowest holds.
type Fault struct {
	Ops       []ObjectOp
	Key       func(key string) bool
	EveryNth  int
	Prob      float64
	Times     int
	Delay     time.Duration
	Err       error
	AfterCall bool
	ShortRead bool

	BytesPerSecond float64
}

// FaultStore wraps an ObjectStore and makes chosen calls fail, slow down
// or return short data, for tests of error paths. Faults are added with
// Inject and apply to calls made after it.
//
// It is deterministic: Prob draws from a generator seeded by NewFaultStore
// and counters are per fault, so the same sequence of calls sees the same
// faults. (Concurrent calls make their own order, and so their faults,
// depend on scheduling.)
type FaultStore struct {
	inner ObjectStore

	mu     sync.Mutex
	rng    *rand.Rand
	faults []*Injection

	// sleep waits out delays and throttles (tests record them).
	sleep func(ctx context.Context, d time.Duration) error
}

var _ ObjectStore = (*FaultStore)(nil)

// Injection is one fault in a FaultStore.
type Injection struct {
	f       Fault
	s       *FaultStore
	matched int
	fired   int
}

// NewFaultStore wraps inner; seed seeds the draws of Fault.Prob.
func NewFaultStore(inner ObjectStore, seed uint64) *FaultStore {
	return &FaultStore{inner: inner, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), sleep: sleepCtx}
}

// Inner returns the wrapped store, for reaching the data past the faults.
func (s *FaultStore) Inner() ObjectStore { return s.inner }

// Inject adds f and returns its handle.
func (s *FaultStore) Inject(f Fault) *Injection {
	in := &Injection{f: f, s: s}
	s.mu.Lock()
	s.faults = append(s.faults, in)
	s.mu.Unlock()
	return in
}

// Clear removes every fault.
func (s *FaultStore) Clear() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Remove takes the fault out of its store.
func (in *Injection) Remove() {
	s := in.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f == in {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			return
		}
	}
}

// Fired returns how many times the fault has fired.
func (in *Injection) Fired() int {
	in.s.mu.Lock()
	defer in.s.mu.Unlock()
	return in.fired
}

// faultEffect is what the faults that fired on one call do, together.
type faultEffect struct {
	delay     time.Duration
	err       error // the first error of the faults that fired
	afterCall bool
	shortRead bool
	// rate is the slowest throttle that fired, in bytes per second (0:
	// none).
	rate float64
}

func (in *Injection) matches(op ObjectOp, key string) bool {
	if len(in.f.Ops) > 0 {
		found := false
		for _, o := range in.f.Ops {
			found = found || o == op
		}
		if !found {
			return false
		}
	}
	return in.f.Key == nil || in.f.Key(key)
}

func (s *FaultStore) effectOf(op ObjectOp, key string) faultEffect {
	var e faultEffect
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.faults {
		if !in.matches(op, key) {
			continue
		}
		in.matched++
		f := &in.f
		if f.Times > 0 && in.fired >= f.Times {
			continue
		}
		switch {
		case f.EveryNth > 0:
			if in.matched%f.EveryNth != 0 {
				continue
			}
		case f.Prob > 0:
			if s.rng.Float64() >= f.Prob {
				continue
			}
		}
		in.fired++
		e.delay += f.Delay
		if f.Err != nil && e.err == nil {
			e.err, e.afterCall = f.Err, f.AfterCall
		}
		e.shortRead = e.shortRead || f.ShortRead
		if f.BytesPerSecond > 0 && (e.rate == 0 || f.BytesPerSecond < e.rate) {
			e.rate = f.BytesPerSecond
		}
	}
	return e
}

// before applies the delay and an error that replaces the call.
func (s *FaultStore) before(ctx context.Context, op ObjectOp, key string) (faultEffect, error) {
	e := s.effectOf(op, key)
	if e.delay > 0 {
		if err := s.sleep(ctx, e.delay); err != nil {
			return e, err
		}
	}
	if e.err != nil && !e.afterCall {
		return e, e.wrap(op, key)
	}
	return e, nil
}

func (e faultEffect) wrap(op ObjectOp, key string) error {
	return fmt.Errorf("%s %q: %w", op, key, e.err)
}

// after applies an error that replaces the call's result.
func (e faultEffect) after(op ObjectOp, key string, err error) error {
	if e.err != nil && e.afterCall {
		return e.wrap(op, key)
	}
	return err
}

func (s *FaultStore) write(ctx context.Context, op ObjectOp, key string, call func() error) error {
	e, err := s.before(ctx, op, key)
	if err != nil {
		return err
	}
	return e.after(op, key, call())
}

func (s *FaultStore) read(ctx context.Context, op ObjectOp, key string, call func() ([]byte, error)) ([]byte, error) {
	e, err := s.before(ctx, op, key)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	data, err := call()
	if err = e.after(op, key, err); err != nil {
		return nil, err
	}
	if e.shortRead {
		data = data[:len(data)/2]
	}
	if e.rate > 0 {
		if d := throttleDelay(len(data), e.rate, time.Since(start)); d > 0 {
			if err := s.sleep(ctx, d); err != nil {
				return nil, err
			}
		}
	}
	return data, nil
}

// throttleDelay is how long a read of n bytes that took elapsed must
// still wait to have moved them at rate bytes per second.
func throttleDelay(n int, rate float64, elapsed time.Duration) time.Duration {
	return time.Duration(float64(n)/rate*float64(time.Second)) - elapsed
}

// Put implements ObjectStore.
func (s *FaultStore) Put(ctx context.Context, key string, data []byte) error {
	return s.write(ctx, ObjectPut, key, func() error { return s.inner.Put(ctx, key, data) })
}

// PutIfAbsent implements ObjectStore.
func (s *FaultStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.write(ctx, ObjectPutIfAbsent, key, func() error { return s.inner.PutIfAbsent(ctx, key, data) })
}

// Get implements ObjectStore.
func (s *FaultStore) Get(ctx context.Context, key string) ([]byte, error) {
	return s.read(ctx, ObjectGet, key, func() ([]byte, error) { return s.inner.Get(ctx, key) })
}

// GetRange implements ObjectStore.
func (s *FaultStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	return s.read(ctx, ObjectGetRange, key, func() ([]byte, error) { return s.inner.GetRange(ctx, key, off, n) })
}

// Delete implements ObjectStore.
func (s *FaultStore) Delete(ctx context.Context, key string) error {
	return s.write(ctx, ObjectDelete, key, func() error { return s.inner.Delete(ctx, key) })
}

// List implements ObjectStore; a Fault's Key sees the prefix.
func (s *FaultStore) List(ctx context.Context, prefix string) ([]string, error) {
	e, err := s.before(ctx, ObjectList, prefix)
	if err != nil {
		return nil, err
	}
	keys, err := s.inner.List(ctx, prefix)
	if err = e.after(ObjectList, prefix, err); err != nil {
		return nil, err
	}
	return keys, nil
}

// ReadConcurrency implements concurrentReader as the inner store does.
func (s *FaultStore) ReadConcurrency() int { return readConcurrency(s.inner) }

package exec

import (
	"fmt"
	"sync"

	"github.com/deeplaked/deeplaked/pgerror"
)

// MemMonitor accounts for the memory that operators hold, in the spirit of
// CockroachDB's mon.BytesMonitor: the server has a root monitor whose limit
// is its memory budget, each session a child of it, and each operator that
// holds rows a MemAccount on its session's monitor. Reservations go up the
// chain, so the root sees every session's; one that would pass a limit
// fails with 53200 and reserves nothing. A nil *MemMonitor has no limit and
// counts nothing.
type MemMonitor struct {
	name   string
	parent *MemMonitor
	// limit bounds used; 0 means no limit of its own.
	limit int64

	mu      sync.Mutex
	used    int64
	peak    int64
	stopped bool
}

// NewMemMonitor returns a root monitor of the given limit in bytes (0: no
// limit).
func NewMemMonitor(name string, limit int64) *MemMonitor {
	return &MemMonitor{name: name, limit: max(limit, 0)}
}

// Child returns a monitor that reserves from m (a session's, from the
// server's).
func (m *MemMonitor) Child(name string) *MemMonitor {
	if m == nil {
		return nil
	}
	return &MemMonitor{name: name, parent: m}
}

// Limit returns m's limit in bytes, or its nearest ancestor's; 0 when none
// has one.
func (m *MemMonitor) Limit() int64 {
	for ; m != nil; m = m.parent {
		if m.limit > 0 {
			return m.limit
		}
	}
	return 0
}

// Used returns the bytes reserved through m.
func (m *MemMonitor) Used() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Peak returns the most bytes m had reserved at once.
func (m *MemMonitor) Peak() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// TakePeak returns the most bytes m had reserved at once since the last
// call.
func (m *MemMonitor) TakePeak() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.peak
	m.peak = m.used
	return p
}

// reserve takes n bytes from m and its ancestors, or returns the monitor
// whose limit they would pass (nothing reserved then).
func (m *MemMonitor) reserve(n int64) *MemMonitor {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return m
	}
	if m.limit > 0 && m.used+n > m.limit {
		return m
	}
	if m.parent != nil {
		if full := m.parent.reserve(n); full != nil {
			return full
		}
	}
	m.used += n
	m.peak = max(m.peak, m.used)
	return nil
}

// release gives n bytes back to m and its ancestors.
func (m *MemMonitor) release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.used -= n
	if m.parent != nil {
		m.parent.release(n)
	}
}

// Stop gives back to m's ancestors whatever m still holds (the accounts of
// a session's operators that were never closed) and makes later
// reservations through m fail. A session stops its monitor when it ends.
func (m *MemMonitor) Stop() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	if m.parent != nil && m.used != 0 {
		m.parent.release(m.used)
	}
	m.used, m.stopped = 0, true
}

// memChunk is the unit in which accounts reserve from their monitor, so
// that monitors' locks are taken once per chunk, not per row.
const memChunk = 1 << 20

// MemAccount is what one operator holds: it grows and shrinks with the
// operator's rows and reserves from its monitor in chunks. Close gives it
// all back. An account without a monitor counts without a limit; a nil
// one counts nothing.
type MemAccount struct {
	mon *MemMonitor
	// what names the holder in errors: "a hash aggregate".
	what string
	// used is what the holder says it holds; reserved what the monitor
	// gave (at least used).
	used, reserved int64
}

// NewAccount returns an account on m for what.
func (m *MemMonitor) NewAccount(what string) *MemAccount {
	return &MemAccount{mon: m, what: what}
}

// account returns an account on the statement's monitor.
func (e *Env) account(what string) *MemAccount { return e.Mem.NewAccount(what) }

// Used returns the bytes the account holds.
func (a *MemAccount) Used() int64 {
	if a == nil {
		return 0
	}
	return a.used
}

// Grow records n more bytes held, reserving from the monitor when they
// pass what is reserved; past a limit it fails with 53200 and records
// nothing.
func (a *MemAccount) Grow(n int64) error {
	if a == nil {
		return nil
	}
	if n <= 0 {
		a.Shrink(-n)
		return nil
	}
	if a.used+n <= a.reserved || a.mon == nil {
		a.used += n
		a.reserved = max(a.reserved, a.used)
		return nil
	}
	need := a.used + n - a.reserved
	// Round up to a chunk, and take more at once as the account grows
	// (an eighth of what it holds) so that a large holder reserves
	// rarely.
	want := max(need, memChunk, a.reserved/8)
	want = (want + memChunk - 1) / memChunk * memChunk
	full := a.mon.reserve(want)
	if full != nil && want > need {
		want = need
		full = a.mon.reserve(want)
	}
	if full != nil {
		return a.outOfMemory(n, full)
	}
	a.reserved += want
	a.used += n
	return nil
}

func (a *MemAccount) outOfMemory(n int64, full *MemMonitor) error {
	return pgerror.New(pgerror.OutOfMemory, "out of memory").WithDetail(
		"Failed on request of size %d bytes in %s: %s of the %s memory limit of %s is in use.",
		n, a.what, FormatBytes(full.Used()), full.name, FormatBytes(full.Limit()))
}

// Resize records that the account now holds n bytes.
func (a *MemAccount) Resize(n int64) error { return a.Grow(n - a.Used()) }

// Shrink records n fewer bytes held; reserved chunks past one spare go
// back to the monitor.
func (a *MemAccount) Shrink(n int64) {
	if a == nil {
		return
	}
	a.used = max(a.used-n, 0)
	if a.mon != nil && a.reserved-a.used > 2*memChunk {
		keep := a.used + memChunk
		a.mon.release(a.reserved - keep)
		a.reserved = keep
	}
}

// Close gives back everything the account reserved.
func (a *MemAccount) Close() {
	if a == nil {
		return
	}
	if a.mon != nil && a.reserved > 0 {
		a.mon.release(a.reserved)
	}
	a.used, a.reserved = 0, 0
}

// FormatBytes prints n as PostgreSQL prints a memory setting: in the
// largest of kB, MB, GB and TB that divides it, or in bytes.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// maxFieldBytes is the largest value a field holds, as in PostgreSQL (1 GB
// less a varlena's header): functions that would build a larger one fail
// with 54000 before they allocate it.
const maxFieldBytes = 1<<30 - 1 - 4

// bigValue is the size from which a function asks the server's memory
// accountant before it builds a value.
const bigValue = 1 << 20

// checkValue fails a value of n bytes before a function builds it: 54000
// "requested length too large" past the largest field, 53200 when the
// server's memory cannot hold it besides held bytes (the rest of the
// values of the function's output batch). From 1 MB on, *acc (made on
// first use, given back by Env.Close) keeps held+n reserved until the
// function's next value.
func (e *Env) checkValue(acc **MemAccount, held, n int64) error {
	if n > maxFieldBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "requested length too large")
	}
	if e == nil || e.Mem == nil || (*acc == nil && held+n < bigValue) {
		return nil
	}
	if *acc == nil {
		*acc = e.Mem.NewAccount("a function's result")
		e.owned = append(e.owned, *acc)
	}
	return (*acc).Resize(held + n)
}

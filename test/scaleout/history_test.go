package scaleout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// opKind is what a write did to a key pair.
type opKind uint8

const (
	opInsert opKind = iota + 1
	opUpdate
	opDelete
)

func (k opKind) String() string {
	switch k {
	case opInsert:
		return "insert"
	case opUpdate:
		return "update"
	case opDelete:
		return "delete"
	}
	return "?"
}

// outcome is what the client was told of a write.
type outcome uint8

const (
	// acked: the server answered success.
	acked outcome = iota + 1
	// failed: the server answered an error that says nothing was
	// committed (23505, 40001, ...).
	failed
	// unknown: the connection was lost (the server was killed) or the
	// server said the commit's outcome is unknown (08007).
	unknown
)

func (o outcome) String() string {
	switch o {
	case acked:
		return "acked"
	case failed:
		return "failed"
	case unknown:
		return "unknown"
	}
	return "?"
}

// op is one write of the pair (key, -key) as the client saw it: an insert
// or update sets key's v to val and -key's to -val (each val is written
// once in the whole test, so a row's value names the write that left it),
// a delete removes both rows.
type op struct {
	kind   opKind
	key    int64
	val    int64
	sid    int64 // the sid RETURNING gave key's row (0: none, a COPY)
	negSid int64 // and -key's
	start  time.Time
	end    time.Time
	out    outcome
	// effect: acknowledged and changed the pair (an UPDATE or DELETE of
	// two rows; an INSERT always).
	effect bool
	server int
	code   string // the error's SQLSTATE, or "conn" for a lost connection
}

func (o *op) String() string {
	s := fmt.Sprintf("%s k=%d v=%d on server %d [%s .. %s] %s", o.kind, o.key, o.val, o.server,
		o.start.Format("15:04:05.000"), o.end.Format("15:04:05.000"), o.out)
	if o.code != "" {
		s += " " + o.code
	}
	if o.out == acked && !o.effect {
		s += " (no row)"
	}
	if o.sid != 0 {
		s += fmt.Sprintf(" sid=%d/%d", o.sid, o.negSid)
	}
	return s
}

// history is the client-side record of every write of the test.
type history struct {
	mu     sync.Mutex
	ops    []*op
	sids   map[int64]string // sid → which write was given it
	keys   []int64          // keys acknowledged as inserted, for updates and deletes to pick
	counts map[string]int
	errs   []string // sids given twice, seen as they come
}

func newHistory() *history {
	return &history{sids: map[int64]string{}, counts: map[string]int{}}
}

// add records a finished write.
func (h *history) add(o *op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, o)
	if o.kind == opInsert && o.out == acked {
		h.keys = append(h.keys, o.key)
		for _, s := range []int64{o.sid, o.negSid} {
			if s == 0 {
				continue
			}
			if prev, ok := h.sids[s]; ok {
				h.errs = append(h.errs, fmt.Sprintf("serial value %d given twice: to %s and to %s", s, prev, o))
			}
			h.sids[s] = o.String()
		}
	}
}

// count adds one to a named counter (the figures the test logs).
func (h *history) count(name string) {
	h.mu.Lock()
	h.counts[name]++
	h.mu.Unlock()
}

// pickKey returns a key acknowledged as inserted, mostly one of the
// latest (those the other server's writers touch too), or ok false.
func (h *history) pickKey(r func(int) int) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.keys)
	if n == 0 {
		return 0, false
	}
	switch r(4) {
	case 0:
		return h.keys[r(n)], true
	case 1:
		return h.keys[n-1-r(min(n, 8))], true
	}
	return h.keys[n-1-r(min(n, 64))], true
}

// row is a row of table t as a server holds it.
type row struct {
	k, v, sid int64
}

// check compares the final rows of t (the same on every server, checked
// before) with the record: every acknowledged write is reflected, no
// failed one is, and a write whose outcome is unknown may or may not be.
//
// For each key pair, the write that left its final state (named by the
// value, or a delete when the rows are absent) must be one that may have
// committed, and no acknowledged write of the pair may have started after
// it ended: commits are ordered by their log entries, and a commit
// acknowledged before another starts has the earlier entry.
// It returns the violations found.
func (h *history) check(final []row) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	for _, e := range h.errs {
		fail("%s", e)
	}

	byKey := map[int64][]*op{}
	byVal := map[int64]*op{}
	for _, o := range h.ops {
		byKey[o.key] = append(byKey[o.key], o)
		if o.kind != opDelete {
			byVal[o.val] = o
		}
	}
	rows := map[int64]row{}
	sids := map[int64]int64{}
	for _, r := range final {
		if _, ok := rows[r.k]; ok {
			fail("key %d appears twice", r.k)
		}
		rows[r.k] = r
		if k, ok := sids[r.sid]; ok {
			fail("serial value %d appears twice: keys %d and %d", r.sid, k, r.k)
		}
		sids[r.sid] = r.k
	}
	// Mirrors: a pair is whole or absent.
	for k, r := range rows {
		m, ok := rows[-k]
		if !ok || m.v != -r.v {
			fail("row (%d, %d) without its pair (%d, %d): %v", k, r.v, -k, -r.v, m)
		}
	}
	history := func(k int64) string {
		var b strings.Builder
		ops := slices.Clone(byKey[k])
		sort.Slice(ops, func(i, j int) bool { return ops[i].start.Before(ops[j].start) })
		for _, o := range ops {
			b.WriteString("\n\t" + o.String())
		}
		return b.String()
	}
	// laterAck tells whether an acknowledged write of k that changed it
	// started after x ended.
	laterAck := func(k int64, x *op) *op {
		for _, y := range byKey[k] {
			if y != x && y.out == acked && y.effect && y.start.After(x.end) {
				return y
			}
		}
		return nil
	}
	keys := map[int64]bool{}
	for k := range byKey {
		keys[k] = true
	}
	for k := range rows {
		if k > 0 {
			keys[k] = true
		}
	}
	for k := range keys {
		r, present := rows[k]
		if present {
			x := byVal[r.v]
			switch {
			case x == nil || x.key != k:
				fail("key %d holds %d, which no write of that key wrote:%s", k, r.v, history(k))
			case x.out == failed:
				fail("key %d holds %d from a write the client was told failed (%s):%s", k, r.v, x.code, history(k))
			case x.out == acked && !x.effect:
				fail("key %d holds %d from an update that changed no row:%s", k, r.v, history(k))
			default:
				if y := laterAck(k, x); y != nil {
					fail("key %d holds %d, but the write %s was acknowledged after it:%s", k, r.v, y, history(k))
				}
				if x.kind == opInsert && x.sid != 0 && (r.sid != x.sid || rows[-k].sid != x.negSid) {
					fail("key %d has sids %d/%d, RETURNING gave %d/%d:%s", k, r.sid, rows[-k].sid, x.sid, x.negSid, history(k))
				}
			}
			continue
		}
		// Absent: nothing acknowledged, or a delete that may have
		// committed and no acknowledged write after it.
		anyAck, ok := false, false
		for _, x := range byKey[k] {
			if x.out == acked && x.effect {
				anyAck = true
			}
			if x.kind == opDelete && x.out != failed && (x.out == unknown || x.effect) && laterAck(k, x) == nil {
				ok = true
			}
		}
		if anyAck && !ok {
			fail("key %d is missing, though acknowledged and never deleted after:%s", k, history(k))
		}
	}
	// An update or delete that changed a pair deleted (acknowledged)
	// before it began needs an insert between: a server that had not
	// yet applied the delete reads the pair, but its commit must then
	// fail, not bring the pair back.
	for k, ops := range byKey {
		for _, d := range ops {
			if d.kind != opDelete || d.out != acked || !d.effect {
				continue
			}
			for _, u := range ops {
				if u.kind == opInsert || u.out != acked || !u.effect || !u.start.After(d.end) {
					continue
				}
				between := false
				for _, i := range ops {
					if i.kind == opInsert && i.out != failed && i.end.After(d.start) && i.start.Before(u.end) {
						between = true
					}
				}
				if !between {
					fail("key %d: %s changed the pair after %s deleted it, with no insert between:%s", k, u, d, history(k))
				}
			}
		}
	}
	// Two inserts of one key both acknowledged need a delete between
	// them.
	for k, ops := range byKey {
		for _, a := range ops {
			if a.kind != opInsert || a.out != acked {
				continue
			}
			for _, b := range ops {
				if b.kind != opInsert || b.out != acked || !b.start.After(a.end) {
					continue
				}
				between := false
				for _, d := range ops {
					if d.kind == opDelete && (d.out == unknown || d.out == acked && d.effect) &&
						d.end.After(a.start) && d.start.Before(b.end) {
						between = true
					}
				}
				if !between {
					fail("key %d was inserted twice, both acknowledged, with no delete between:%s", k, history(k))
				}
			}
		}
	}
	sort.Strings(errs)
	return errs
}

// summary returns the counters, sorted, and the writes' outcomes.
func (h *history) summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := map[string]int{}
	for k, v := range h.counts {
		c[k] = v
	}
	for _, o := range h.ops {
		name := fmt.Sprintf("s%d %s %s", o.server, o.kind, o.out)
		if o.code != "" {
			name += " " + o.code
		}
		if o.out == acked && !o.effect {
			name += " (no row)"
		}
		c[name]++
	}
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "\n\t%-40s %d", k, c[k])
	}
	return b.String()
}

// counter returns a counter's value.
func (h *history) counter(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[name]
}

// total counts the recorded writes that match f.
func (h *history) total(f func(*op) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, o := range h.ops {
		if f(o) {
			n++
		}
	}
	return n
}

// landed counts the inserts and updates whose outcome the client could
// not know and whose value the final rows hold.
func (h *history) landed(final []row) (landed, unknowns int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	vals := map[int64]bool{}
	for _, r := range final {
		vals[r.v] = true
	}
	for _, o := range h.ops {
		if o.out == unknown && o.kind != opDelete {
			unknowns++
			if vals[o.val] {
				landed++
			}
		}
	}
	return landed, unknowns
}

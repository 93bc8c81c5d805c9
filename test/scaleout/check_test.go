package scaleout

import (
	"strings"
	"testing"
	"time"
)

// TestHistoryCheck feeds the record's check made-up histories: it passes
// the ones a correct cluster may give and names what is wrong in the
// others.
func TestHistoryCheck(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ins := func(k, v int64, from, to int, out outcome) *op {
		o := &op{kind: opInsert, key: k, val: v, start: at(from), end: at(to), out: out, effect: out == acked, server: 1}
		if out == acked {
			o.sid, o.negSid = v*10, v*10+1
		}
		return o
	}
	upd := func(k, v int64, from, to int, out outcome, effect bool) *op {
		return &op{kind: opUpdate, key: k, val: v, start: at(from), end: at(to), out: out, effect: effect, server: 2}
	}
	del := func(k int64, from, to int, out outcome, effect bool) *op {
		return &op{kind: opDelete, key: k, start: at(from), end: at(to), out: out, effect: effect, server: 2}
	}
	pair := func(k, v int64) []row { return []row{{k, v, v * 10}, {-k, -v, v*10 + 1}} }
	for _, c := range []struct {
		name  string
		ops   []*op
		final []row
		want  string // "" for no violation
	}{
		{"acked insert", []*op{ins(1, 10, 0, 1, acked)}, pair(1, 10), ""},
		{"acked insert lost", []*op{ins(1, 10, 0, 1, acked)}, nil, "missing"},
		{"failed insert present", []*op{ins(1, 10, 0, 1, failed)}, pair(1, 10), "told failed"},
		{"unknown insert present", []*op{ins(1, 10, 0, 1, unknown)}, []row{{1, 10, 5}, {-1, -10, 6}}, ""},
		{"unknown insert absent", []*op{ins(1, 10, 0, 1, unknown)}, nil, ""},
		{"later update lost", []*op{ins(1, 10, 0, 1, acked), upd(1, 11, 2, 3, acked, true)}, pair(1, 10), "acknowledged after it"},
		{"concurrent updates", []*op{ins(1, 10, 0, 1, acked), upd(1, 11, 2, 5, acked, true), upd(1, 12, 3, 4, acked, true)},
			[]row{{1, 11, 100}, {-1, -11, 101}}, ""},
		{"update of no row", []*op{ins(1, 10, 0, 1, acked), upd(1, 11, 2, 3, acked, false)}, []row{{1, 11, 100}, {-1, -11, 101}}, "changed no row"},
		{"acked delete", []*op{ins(1, 10, 0, 1, acked), del(1, 2, 3, acked, true)}, nil, ""},
		{"unknown delete", []*op{ins(1, 10, 0, 1, acked), del(1, 2, 3, unknown, false)}, nil, ""},
		{"failed delete", []*op{ins(1, 10, 0, 1, acked), del(1, 2, 3, failed, false)}, nil, "missing"},
		{"pair brought back", []*op{ins(1, 10, 0, 1, acked), del(1, 2, 3, acked, true), upd(1, 11, 4, 5, acked, true)},
			[]row{{1, 11, 100}, {-1, -11, 101}}, "after"},
		{"insert after delete", []*op{ins(1, 10, 0, 1, acked), del(1, 2, 3, acked, true), ins(1, 12, 4, 5, acked)}, pair(1, 12), ""},
		{"inserted twice", []*op{ins(1, 10, 0, 1, acked), ins(1, 12, 4, 5, acked)}, pair(1, 12), "inserted twice"},
		{"half a pair", []*op{ins(1, 10, 0, 1, acked)}, pair(1, 10)[:1], "without its pair"},
		{"sid twice", []*op{ins(1, 10, 0, 1, acked), ins(2, 20, 0, 1, acked)},
			append(pair(1, 10), row{2, 20, 100}, row{-2, -20, 201}), "appears twice"},
		{"sid not RETURNING's", []*op{ins(1, 10, 0, 1, acked)}, []row{{1, 10, 7}, {-1, -10, 101}}, "RETURNING gave"},
		{"value of another key", []*op{ins(1, 10, 0, 1, acked), ins(2, 20, 0, 1, acked)},
			append(pair(1, 20), pair(2, 20)[1:]...), "which no write of that key wrote"},
	} {
		h := newHistory()
		for _, o := range c.ops {
			h.add(o)
		}
		errs := h.check(c.final)
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%s: %q", c.name, errs)
		case c.want != "" && (len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), c.want)):
			t.Errorf("%s: got %q, want a violation saying %q", c.name, errs, c.want)
		}
	}

	// A serial value RETURNING gave twice.
	h := newHistory()
	h.add(ins(1, 10, 0, 1, acked))
	o := ins(2, 20, 0, 1, acked)
	o.sid = 100
	h.add(o)
	if errs := h.check(nil); !strings.Contains(strings.Join(errs, "\n"), "given twice") {
		t.Errorf("a sid RETURNING gave twice: %q", errs)
	}
}

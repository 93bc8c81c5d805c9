package scaleout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
)

// The workload's table: pairs of rows (k, v) and (-k, -v), each pair
// written by one statement, so that a snapshot holds both rows of a pair
// or neither, and sum(v) is 0. sid is a serial every row takes.
const createTable = "CREATE TABLE t (k bigint PRIMARY KEY, v bigint, sid bigserial)"

const (
	// sharedKeys: keys 1..sharedKeys are inserted by every writer of
	// both servers, so that primary keys collide (23505).
	sharedKeys = 400
	// ownBase: writer w's own keys start at (w+1)*ownBase.
	ownBase = 10_000_000
	// copyPairs is the number of pairs in one COPY.
	copyPairs = 20
	// scratchTables is how many scratch table names the DDL of all
	// writers shares.
	scratchTables = 3
	// opTimeout bounds one statement.
	opTimeout = 20 * time.Second
)

// outage is when the storage was down (versitygw stopped), so that the
// statements running then may fail with 58030.
type outage struct {
	mu       sync.Mutex
	from, to time.Time // to is zero while the storage is down
}

// outageGrace is how long after the storage is back a statement may
// still fail for the outage (its retries ran out meanwhile).
const outageGrace = 5 * time.Second

func (o *outage) begin() {
	o.mu.Lock()
	o.from, o.to = time.Now(), time.Time{}
	o.mu.Unlock()
}

func (o *outage) end() {
	o.mu.Lock()
	o.to = time.Now()
	o.mu.Unlock()
}

// overlaps tells whether a statement that ran from start to end may have
// met the outage.
func (o *outage) overlaps(start, end time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.from.IsZero():
		return false
	case o.to.IsZero():
		return end.After(o.from)
	}
	return end.After(o.from) && start.Before(o.to.Add(outageGrace))
}

// excused tells whether err, from a statement that began at start, is
// the storage's outage: an I/O error (58030) or a lost connection.
func (o *outage) excused(err error, start time.Time) bool {
	if !o.overlaps(start, time.Now()) {
		return false
	}
	var pe *pgconn.PgError
	return !errors.As(err, &pe) || pe.Code == "58030"
}

// writer writes to one server from one connection until its deadline.
type writer struct {
	t        *testing.T
	id       int
	server   int
	dsn      string
	h        *history
	rng      *rand.Rand
	conn     *pgx.Conn
	seq      int64
	own      int64
	inflight *atomic.Int32 // writes in flight on the writer's server
	vacuums  *atomic.Int32 // and VACUUMs
	outage   *outage
	opStart  time.Time // when the statement in flight began
}

func newWriter(t *testing.T, id, server int, dsn string, h *history, inflight, vacuums *atomic.Int32, o *outage) *writer {
	return &writer{t: t, id: id, server: server, dsn: dsn, h: h, rng: rand.New(rand.NewPCG(uint64(id), 42)),
		own: int64(id+1) * ownBase, inflight: inflight, vacuums: vacuums, outage: o}
}

// nextVal returns a value no other write of the test writes.
func (w *writer) nextVal() int64 {
	w.seq++
	return int64(w.id+1)<<40 | w.seq
}

func (w *writer) run(deadline time.Time) {
	defer func() {
		if w.conn != nil {
			w.conn.Close(context.Background())
		}
	}()
	for time.Now().Before(deadline) {
		if w.conn == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c, err := pgx.Connect(ctx, w.dsn)
			cancel()
			if err != nil {
				// The server is down (killed, restarting).
				w.h.count(fmt.Sprintf("s%d reconnect tries", w.server))
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.conn = c
		}
		switch r := w.rng.IntN(100); {
		case r < 35:
			w.insert()
		case r < 45:
			w.copyPairs()
		case r < 63:
			w.update()
		case r < 78:
			w.delete()
		case r < 86:
			w.tx()
		case r < 97:
			w.ddl()
		default:
			w.vacuum()
		}
	}
}

// classify tells what an error says of a write's commit.
func classify(err error) (outcome, string) {
	if err == nil {
		return acked, ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "08007", "08006", "08003", "57P01", "57P02", "57P03":
			return unknown, pe.Code
		}
		return failed, pe.Code
	}
	return unknown, "conn"
}

// finish classifies err, checks that a failure's code is one the
// statement may give, and drops a connection that may be broken.
func (w *writer) finish(what string, err error, allowed ...string) (outcome, string) {
	out, code := classify(err)
	switch out {
	case unknown:
		w.h.count(fmt.Sprintf("s%d statements cut", w.server))
		w.conn.Close(context.Background())
		w.conn = nil
	case failed:
		// 58030 says the commit did not land (publish read it back);
		// one whose outcome is unknown is 08007.
		ok := code == "58030" && w.outage.overlaps(w.opStart, time.Now())
		for _, a := range allowed {
			ok = ok || a == code
		}
		if !ok {
			w.t.Errorf("server %d: %s: %v", w.server, what, err)
		}
	}
	return out, code
}

func (w *writer) pickNewKey() int64 {
	if w.rng.IntN(10) < 3 {
		return 1 + w.rng.Int64N(sharedKeys)
	}
	w.own++
	return w.own
}

func (w *writer) begin() (context.Context, context.CancelFunc, time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	w.inflight.Add(1)
	w.opStart = time.Now()
	return ctx, func() { w.inflight.Add(-1); cancel() }, w.opStart
}

// insertPair runs INSERT of one pair through q (the connection or a
// transaction) and returns the sids RETURNING gave.
func insertPair(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, k, v int64) (sid, negSid int64, err error) {
	rows, err := q.Query(ctx, fmt.Sprintf("INSERT INTO t (k, v) VALUES (%d, %d), (%d, %d) RETURNING k, sid", k, v, -k, -v))
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		var rk, rs int64
		if err := rows.Scan(&rk, &rs); err != nil {
			rows.Close()
			return 0, 0, err
		}
		if rk == k {
			sid = rs
		} else {
			negSid = rs
		}
	}
	rows.Close()
	return sid, negSid, rows.Err()
}

func (w *writer) insert() {
	k, v := w.pickNewKey(), w.nextVal()
	ctx, done, start := w.begin()
	sid, negSid, err := insertPair(ctx, w.conn, k, v)
	done()
	o := &op{kind: opInsert, key: k, val: v, start: start, end: time.Now(), server: w.server}
	o.out, o.code = w.finish("INSERT", err, "23505", "40001")
	if o.out == acked {
		o.effect, o.sid, o.negSid = true, sid, negSid
		if sid == 0 || negSid == 0 {
			w.t.Errorf("server %d: INSERT of %d RETURNING gave sids %d/%d", w.server, k, sid, negSid)
		}
	}
	w.h.add(o)
}

// copyPairs copies copyPairs pairs of its own keys, one of them now and
// then a shared key (the whole COPY then fails with 23505 if taken).
func (w *writer) copyPairs() {
	var buf bytes.Buffer
	ops := make([]*op, 0, copyPairs)
	for i := 0; i < copyPairs; i++ {
		k := w.own + 1
		if i == copyPairs/2 && w.rng.IntN(5) == 0 {
			k = 1 + w.rng.Int64N(sharedKeys)
		} else {
			w.own++
		}
		v := w.nextVal()
		fmt.Fprintf(&buf, "%d\t%d\n%d\t%d\n", k, v, -k, -v)
		ops = append(ops, &op{kind: opInsert, key: k, val: v, server: w.server})
	}
	ctx, done, start := w.begin()
	_, err := w.conn.PgConn().CopyFrom(ctx, &buf, "COPY t (k, v) FROM STDIN")
	done()
	end := time.Now()
	out, code := w.finish("COPY", err, "23505", "40001")
	w.h.count(fmt.Sprintf("s%d copy %s %s", w.server, out, code))
	for _, o := range ops {
		o.start, o.end, o.out, o.code, o.effect = start, end, out, code, out == acked
		w.h.add(o)
	}
}

// changed checks that an UPDATE or DELETE of a pair changed both rows or
// neither.
func (w *writer) changed(what string, k int64, tag pgconn.CommandTag) bool {
	switch n := tag.RowsAffected(); n {
	case 0:
		return false
	case 2:
		return true
	default:
		w.t.Errorf("server %d: %s of the pair %d changed %d rows", w.server, what, k, n)
		return true
	}
}

func updateSQL(k, v int64) string {
	return fmt.Sprintf("UPDATE t SET v = CASE WHEN k > 0 THEN %d ELSE %d END WHERE k IN (%d, %d)", v, -v, k, -k)
}

func (w *writer) update() {
	k, ok := w.h.pickKey(w.rng.IntN)
	if !ok {
		return
	}
	v := w.nextVal()
	ctx, done, start := w.begin()
	tag, err := w.conn.Exec(ctx, updateSQL(k, v))
	done()
	o := &op{kind: opUpdate, key: k, val: v, start: start, end: time.Now(), server: w.server}
	o.out, o.code = w.finish("UPDATE", err, "40001")
	if o.out == acked {
		o.effect = w.changed("UPDATE", k, tag)
	}
	w.h.add(o)
}

func (w *writer) delete() {
	k, ok := w.h.pickKey(w.rng.IntN)
	if !ok {
		return
	}
	ctx, done, start := w.begin()
	tag, err := w.conn.Exec(ctx, fmt.Sprintf("DELETE FROM t WHERE k IN (%d, %d)", k, -k))
	done()
	o := &op{kind: opDelete, key: k, start: start, end: time.Now(), server: w.server}
	o.out, o.code = w.finish("DELETE", err, "40001")
	if o.out == acked {
		o.effect = w.changed("DELETE", k, tag)
	}
	w.h.add(o)
}

// tx inserts a pair and updates another in one transaction block: both
// commit or neither.
func (w *writer) tx() {
	uk, ok := w.h.pickKey(w.rng.IntN)
	if !ok {
		return
	}
	k, v, uv := w.pickNewKey(), w.nextVal(), w.nextVal()
	ctx, done, start := w.begin()
	var sid, negSid int64
	var tag pgconn.CommandTag
	tx, err := w.conn.Begin(ctx)
	if err == nil {
		sid, negSid, err = insertPair(ctx, tx, k, v)
		if err == nil {
			tag, err = tx.Exec(ctx, updateSQL(uk, uv))
		}
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			// The block's first error decides; the rollback of a
			// failed block says nothing more.
			_ = tx.Rollback(ctx)
		}
	}
	done()
	end := time.Now()
	ins := &op{kind: opInsert, key: k, val: v, start: start, end: end, server: w.server}
	upd := &op{kind: opUpdate, key: uk, val: uv, start: start, end: end, server: w.server}
	out, code := w.finish("transaction block", err, "23505", "40001")
	if errors.Is(err, pgx.ErrTxCommitRollback) {
		w.t.Errorf("server %d: COMMIT rolled back without an error", w.server)
	}
	w.h.count(fmt.Sprintf("s%d tx %s %s", w.server, out, code))
	for _, o := range []*op{ins, upd} {
		o.out, o.code = out, code
	}
	if out == acked {
		ins.effect, ins.sid, ins.negSid = true, sid, negSid
		upd.effect = w.changed("UPDATE in a transaction block", uk, tag)
	}
	w.h.add(ins)
	w.h.add(upd)
}

// ddl creates, fills or drops one of the scratch tables that every
// writer shares: the other servers' DDL makes them collide.
func (w *writer) ddl() {
	name := "scratch" + strconv.Itoa(w.rng.IntN(scratchTables))
	var q string
	var allowed []string
	switch w.rng.IntN(3) {
	case 0:
		q, allowed = "CREATE TABLE "+name+" (a int, b text)", []string{"42P07", "40001"}
	case 1:
		q, allowed = "INSERT INTO "+name+" VALUES (1, 'x')", []string{"42P01", "40001"}
	default:
		q, allowed = "DROP TABLE "+name, []string{"42P01", "40001"}
	}
	ctx, done, _ := w.begin()
	_, err := w.conn.Exec(ctx, q)
	done()
	out, code := w.finish(q, err, allowed...)
	w.h.count(fmt.Sprintf("s%d ddl %s %s %s", w.server, q[:6], out, code))
}

func (w *writer) vacuum() {
	ctx, done, _ := w.begin()
	w.vacuums.Add(1)
	_, err := w.conn.Exec(ctx, "VACUUM t")
	w.vacuums.Add(-1)
	done()
	out, code := w.finish("VACUUM", err, "40001")
	w.h.count(fmt.Sprintf("s%d vacuum %s %s", w.server, out, code))
}

// pairsOK checks that rows (k → v) hold whole pairs only.
func pairsOK(rows map[int64]int64) error {
	for k, v := range rows {
		if m, ok := rows[-k]; !ok || m != -v {
			return fmt.Errorf("row (%d, %d) without (%d, %d) among %d rows", k, v, -k, -v, len(rows))
		}
	}
	return nil
}

// queryLoop reads count(*) and sum(v) twice inside each transaction, with
// other servers' commits applied in between: both reads must agree, and
// each must see whole pairs. It returns how many transactions saw the
// table change under them (read outside after the second read).
func queryLoop(t *testing.T, dsn string, deadline time.Time, o *outage) (txns, changed, excused int) {
	ctx := context.Background()
	var conn, other *pgx.Conn
	defer func() {
		for _, c := range []*pgx.Conn{conn, other} {
			if c != nil {
				c.Close(ctx)
			}
		}
	}()
	type reading struct{ n, sum, pos int64 }
	read := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (r reading, err error) {
		if err = q.QueryRow(ctx, "SELECT count(*), coalesce(sum(v), 0) FROM t").Scan(&r.n, &r.sum); err == nil {
			err = q.QueryRow(ctx, "SELECT count(*) FROM t WHERE k > 0").Scan(&r.pos)
		}
		return r, err
	}
	for time.Now().Before(deadline) {
		start := time.Now()
		var err error
		if conn == nil {
			if conn, err = pgx.Connect(ctx, dsn); err == nil {
				other, err = pgx.Connect(ctx, dsn)
			}
			if err != nil {
				t.Errorf("query reader: %v", err)
				return
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Errorf("query reader: BEGIN: %v", err)
			return
		}
		a, err := read(tx)
		if err == nil {
			// A refresh or two, and now and then another server's
			// VACUUM, come between the reads.
			pause := 300 * time.Millisecond
			if txns%3 == 2 {
				pause = 1500 * time.Millisecond
			}
			time.Sleep(pause)
			var b reading
			if b, err = read(tx); err == nil && a != b {
				t.Errorf("one transaction read %+v, then %+v", a, b)
			}
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil && o.excused(err, start) {
			excused++
			conn.Close(ctx)
			other.Close(ctx)
			conn, other = nil, nil
			continue
		}
		if err != nil {
			t.Errorf("query reader: %v", err)
			return
		}
		if a.sum != 0 || a.n != 2*a.pos {
			t.Errorf("a transaction saw half a pair: %d rows, %d with k > 0, sum(v) %d", a.n, a.pos, a.sum)
		}
		txns++
		if now, err := read(other); err == nil && now.n != a.n {
			changed++
		}
	}
	return txns, changed, excused
}

// streamLoop streams t as tensors, whole or as two shards of one epoch,
// and checks that what a stream (or an epoch's shards together) holds is
// one snapshot: whole pairs, no row twice. It returns the number of
// streams and the rows they held.
func streamLoop(t *testing.T, dsn string, deadline time.Time, o *outage) (streams, rows, excused int) {
	ctx := context.Background()
	var conn *pgconn.PgConn
	defer func() {
		if conn != nil {
			conn.Close(ctx)
		}
	}()
	for i := 1; time.Now().Before(deadline); i++ {
		if conn == nil {
			var err error
			if conn, err = pgconn.Connect(ctx, dsn); err != nil {
				t.Errorf("stream reader: %v", err)
				return
			}
		}
		start := time.Now()
		got := map[int64]int64{}
		opts := []stream.Options{{BatchSize: 128, Shuffle: i%2 == 0, Seed: int64(i)}}
		// Every fourth stream is read slowly, so that other servers'
		// VACUUMs and flushes replace the fragments it reads meanwhile.
		slow := i%4 == 1
		if slow {
			opts[0].BatchSize = 32
		}
		if i%3 == 0 {
			epoch := fmt.Sprintf("scaleout-%d", i)
			opts = []stream.Options{
				{BatchSize: 128, Shuffle: true, Seed: int64(i), Rank: 0, World: 2, Epoch: epoch},
				{BatchSize: 128, Shuffle: true, Seed: int64(i), Rank: 1, World: 2, Epoch: epoch},
			}
		}
		failed := false
		for _, opt := range opts {
			s, err := stream.Stream(ctx, conn, "SELECT k, v FROM t", opt)
			if err != nil {
				t.Errorf("stream reader: %v", err)
				return
			}
			for s.Next() {
				b := s.Batch()
				ks, vs := b.Column("k").Int64(), b.Column("v").Int64()
				for j, k := range ks {
					if _, dup := got[k]; dup {
						t.Errorf("stream %+v: key %d twice", opt, k)
					}
					got[k] = vs[j]
				}
				if slow {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := s.Err(); err != nil {
				s.Close()
				if o.excused(err, start) {
					excused++
					failed = true
					conn.Close(ctx)
					conn = nil
					break
				}
				t.Errorf("stream %+v: %v", opt, err)
				return
			}
			s.Close()
		}
		if failed {
			continue
		}
		if err := pairsOK(got); err != nil {
			t.Errorf("stream %+v saw half a pair: %v", opts, err)
		}
		streams++
		rows += len(got)
	}
	return streams, rows, excused
}

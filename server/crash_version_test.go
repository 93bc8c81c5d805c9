package server_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// versionCrash is what clients of a versioned table had acknowledged when
// the server was killed: each commit or merge commit with the rows (count
// and sum of v) its version read, and the keys inserted on each branch.
type versionCrash struct {
	mu      sync.Mutex
	commits map[string][2]int64
	merges  []string
	keys    map[string][]int64 // branch → keys acknowledged
	stop    atomic.Bool
	errs    chan error
}

func (vc *versionCrash) fail(err error) {
	if vc.stop.Load() {
		return // the kill ends the clients' statements
	}
	select {
	case vc.errs <- err:
	default:
	}
}

// snapshotCommit commits the branch's version in a transaction that also
// reads its rows, so the commit's id and what it names are known together.
func (vc *versionCrash) snapshotCommit(ctx context.Context, conn *pgx.Conn, table, msg string) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var n, sum int64
	if err := tx.QueryRow(ctx, "SELECT count(*), coalesce(sum(v), 0) FROM "+table).Scan(&n, &sum); err != nil {
		return err
	}
	var id string
	if err := tx.QueryRow(ctx, "SELECT deeplake_commit($1, $2)", "vt", msg).Scan(&id); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	vc.mu.Lock()
	vc.commits[id] = [2]int64{n, sum}
	vc.mu.Unlock()
	return nil
}

// writer inserts keys of its own range on branch, updates base keys, and
// commits now and then.
func (vc *versionCrash) writer(ctx context.Context, conn *pgx.Conn, branch string, base int64, seed uint64) {
	defer conn.Close(context.Background())
	rng := rand.New(rand.NewPCG(seed, 3))
	if _, err := conn.Exec(ctx, "SET deeplake.branch = 'vt:"+branch+"'"); err != nil {
		vc.fail(err)
		return
	}
	next := base
	for i := 0; !vc.stop.Load(); i++ {
		var err error
		switch {
		case i%7 == 6:
			err = vc.snapshotCommit(ctx, conn, "vt", branch+" commit")
		case i%3 == 2:
			_, err = conn.Exec(ctx, "UPDATE vt SET v = v + 1 WHERE id = $1", rng.Int64N(2000))
		default:
			n := 1 + rng.Int64N(50)
			_, err = conn.Exec(ctx, "INSERT INTO vt SELECT g, g % 100 FROM generate_series($1::int, $2::int) g", next, next+n-1)
			if err == nil {
				vc.mu.Lock()
				for k := next; k < next+n; k++ {
					vc.keys[branch] = append(vc.keys[branch], k)
				}
				vc.mu.Unlock()
				next += n
			}
		}
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && pe.Code == "40001") {
			vc.fail(fmt.Errorf("%s writer: %w", branch, err))
			return
		}
	}
}

// merger merges dev into main again and again, recording each merge
// commit and what its version reads.
func (vc *versionCrash) merger(ctx context.Context, conn *pgx.Conn) {
	defer conn.Close(context.Background())
	for !vc.stop.Load() {
		var id string
		err := conn.QueryRow(ctx, "SELECT deeplake_merge('vt', 'dev', 'main', 'theirs')").Scan(&id)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "40001" {
			continue
		}
		if err != nil {
			vc.fail(fmt.Errorf("merge: %w", err))
			return
		}
		var n, sum int64
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(sum(v), 0) FROM "vt@%s"`, id)).Scan(&n, &sum); err != nil {
			vc.fail(fmt.Errorf("reading merge %s: %w", id, err))
			return
		}
		vc.mu.Lock()
		vc.commits[id] = [2]int64{n, sum}
		vc.merges = append(vc.merges, id)
		vc.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKill9DuringCommitAndMerge kills the server while clients write two
// branches of a table, commit both and merge one into the other: after
// the restart every acknowledged commit and merge commit reads what it
// read before, the history's parents all exist, and every acknowledged
// insert is on its branch.
func TestKill9DuringCommitAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server binary")
	}
	bin := buildBinary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := crashDataDir(t)
	p, addr := crashServer(t, bin, dataDir, crashSetup{})
	admin := connect(t, addr)
	mustExec(t, admin, "CREATE TABLE vt (id int PRIMARY KEY, v int)")
	mustExec(t, admin, "INSERT INTO vt SELECT g, g % 100 FROM generate_series(0, 1999) g")
	mustExec(t, admin, "SELECT deeplake_branch('vt', 'dev')")
	admin.Close(ctx)

	vc := &versionCrash{commits: map[string][2]int64{}, keys: map[string][]int64{}, errs: make(chan error, 1)}
	var wg sync.WaitGroup
	wg.Go(func() { vc.writer(ctx, connect(t, addr), "main", 1_000_000, seed) })
	wg.Go(func() { vc.writer(ctx, connect(t, addr), "dev", 2_000_000, seed+1) })
	wg.Go(func() { vc.merger(ctx, connect(t, addr)) })
	rng := rand.New(rand.NewPCG(seed, 9))
	delay := time.Second + time.Duration(rng.Int64N(int64(time.Second)))
	start := time.Now()
	waitFor(t, 30*time.Second, "commits and merges", func() bool {
		select {
		case err := <-vc.errs:
			t.Fatal(err)
		default:
		}
		vc.mu.Lock()
		defer vc.mu.Unlock()
		return len(vc.merges) >= 2 && len(vc.commits) >= 6 && time.Since(start) >= delay
	})
	vc.stop.Store(true)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	wg.Wait()
	t.Logf("killed after %v: %d commits, %d merges acknowledged", time.Since(start).Round(time.Millisecond), len(vc.commits), len(vc.merges))

	p, addr = crashServer(t, bin, dataDir, crashSetup{})
	conn := connect(t, addr)
	defer conn.Close(ctx)
	for id, want := range vc.commits {
		var n, sum int64
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(sum(v), 0) FROM "vt@%s"`, id)).Scan(&n, &sum); err != nil {
			t.Fatalf("commit %s after the restart: %v", id, err)
		}
		if n != want[0] || sum != want[1] {
			t.Fatalf("commit %s reads %d rows (sum %d) after the restart, %d (sum %d) before", id, n, sum, want[0], want[1])
		}
	}
	// The history is whole: every parent of every commit exists, and
	// each merge commit has the commit it merged as its second parent.
	known := map[string]bool{}
	parents := map[string][2]string{}
	for _, ref := range []string{"main", "dev"} {
		rows, err := conn.Query(ctx, fmt.Sprintf("SELECT id, coalesce(parent, ''), coalesce(merged, '') FROM deeplake_log('vt', '%s')", ref))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, parent, merged string
			if err := rows.Scan(&id, &parent, &merged); err != nil {
				t.Fatal(err)
			}
			known[id] = true
			parents[id] = [2]string{parent, merged}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for id, ps := range parents {
		for _, p := range ps {
			if p != "" && !known[p] {
				t.Fatalf("commit %s has parent %s, which the log does not reach", id, p)
			}
		}
	}
	for _, m := range vc.merges {
		if !known[m] || parents[m][1] == "" {
			t.Fatalf("merge commit %s: in the log %v, parents %v", m, known[m], parents[m])
		}
	}
	for branch, keys := range vc.keys {
		var n int64
		q := fmt.Sprintf(`SELECT count(*) FROM "vt@%s" WHERE id = ANY($1)`, branch)
		if err := conn.QueryRow(ctx, q, keys).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != int64(len(keys)) {
			t.Fatalf("%d of %d acknowledged inserts on %s after the restart", n, len(keys), branch)
		}
	}
	// And it goes on: another merge.
	mustExec(t, conn, "SELECT deeplake_merge('vt', 'dev', 'main', 'theirs')")
	stopServer(t, p)
}

package server_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/server"
)

// TestTransactionSnapshotAndConflict checks, over the wire, that a
// transaction block reads one snapshot while others commit, and that of
// two transactions deleting one row the second to commit gets 40001.
func TestTransactionSnapshotAndConflict(t *testing.T) {
	srv := startServer(t, t.TempDir())
	defer srv.Close()
	a, b := connect(t, srv.Addr()), connect(t, srv.Addr())
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	mustExec(t, a, "CREATE TABLE s (id int PRIMARY KEY, v int)")
	mustExec(t, a, "INSERT INTO s VALUES (1, 10), (2, 20), (3, 30)")

	mustExec(t, a, "BEGIN")
	if got := queryText(t, a, "SELECT count(*) FROM s"); got[0][0] != "3" {
		t.Fatalf("count %v", got)
	}
	mustExec(t, b, "INSERT INTO s VALUES (4, 40)")
	mustExec(t, b, "UPDATE s SET v = 21 WHERE id = 2")
	if got := queryText(t, a, "SELECT count(*), sum(v) FROM s"); got[0][0] != "3" || got[0][1] != "60" {
		t.Fatalf("snapshot changed under a transaction block: %v", got)
	}
	// a updates the row b already updated: its commit must fail.
	mustExec(t, a, "UPDATE s SET v = 22 WHERE id = 2")
	_, err := a.Exec(context.Background(), "COMMIT")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40001" {
		t.Fatalf("COMMIT after a concurrent update: %v, want SQLSTATE 40001", err)
	}
	if got := queryText(t, a, "SELECT v FROM s WHERE id = 2"); got[0][0] != "21" {
		t.Fatalf("row 2 is %v, want b's 21", got)
	}
	if got := queryText(t, a, "SELECT count(*), sum(v) FROM s"); got[0][0] != "4" || got[0][1] != "101" {
		t.Fatalf("after: %v", got)
	}
}

// TestVacuumReclaimsDeletedRows checks that VACUUM over the wire, with no
// old versions retained, merges the table's fragments, drops its deleted
// rows and deletes the objects nothing reads any more.
func TestVacuumReclaimsDeletedRows(t *testing.T) {
	dir := t.TempDir()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: dir, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, srv.Addr())
	defer c.Close(context.Background())
	mustExec(t, c, "CREATE TABLE v (id int8, t float32[64])")
	tensor := "'{" + strings.Repeat("0.5,", 63) + "1}'"
	for f := 0; f < 5; f++ {
		var q strings.Builder
		q.WriteString("INSERT INTO v VALUES ")
		for i := 0; i < 1000; i++ {
			if i > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "(%d, %s)", f*1000+i, tensor)
		}
		mustExec(t, c, q.String())
		if err := srv.DB().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, c, "DELETE FROM v WHERE id % 2 = 0")
	objects := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".dlc") {
				n++
			}
			return nil
		})
		return n
	}
	before := objects()
	mustExec(t, c, "VACUUM v")
	after := objects()
	// 5 fragments × 4 stored columns (id, t, _rowid, _xmin) become one.
	if before != 20 || after != 4 {
		t.Fatalf("chunk objects %d before VACUUM, %d after; want 20 and 4", before, after)
	}
	if got := queryText(t, c, "SELECT count(*), min(id), max(id) FROM v"); got[0][0] != "2500" || got[0][1] != "1" || got[0][2] != "4999" {
		t.Fatalf("after VACUUM: %v", got)
	}
	vs, err := srv.DB().Versions("v")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions after VACUUM: %v, %v", vs, err)
	}
}

package session

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// TestCreateTableAsAborted: a CREATE TABLE ... AS whose transaction does
// not commit leaves no table, also when its query string fails after it;
// the undo drops that table only, not one made again under its name.
func TestCreateTableAsAborted(t *testing.T) {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	s := connect(t, eng, "u")
	mustRun(t, s, "CREATE TABLE src (id int)", "")
	mustRun(t, s, "INSERT INTO src SELECT g FROM generate_series(1, 10) g", "INSERT 0 10")
	// One query string, one implicit transaction: the division fails it.
	if _, err := run(t, s, "CREATE TABLE c1 AS SELECT id FROM src; SELECT 1 / 0"); pgerror.GetCode(err) != pgerror.DivisionByZero {
		t.Fatalf("the query string: %v", err)
	}
	wantCode(t, s, "SELECT * FROM c1", pgerror.UndefinedTable)
	// The query itself fails.
	wantCode(t, s, "CREATE TABLE c1 AS SELECT 1 / (id - 5) FROM src", pgerror.DivisionByZero)
	wantCode(t, s, "SELECT * FROM c1", pgerror.UndefinedTable)
	// A block that another session's table outlives: c2 is dropped by the
	// rollback, then made again elsewhere; a second rollback of a block
	// that dropped and made it again must not drop that one.
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, "CREATE TABLE c2 AS SELECT id FROM src", "SELECT 10")
	mustRun(t, s, "DROP TABLE c2", "DROP TABLE")
	other := connect(t, eng, "u")
	mustRun(t, other, "CREATE TABLE c2 (x int)", "CREATE TABLE")
	mustRun(t, other, "INSERT INTO c2 VALUES (1)", "INSERT 0 1")
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	mustRun(t, other, "SELECT count(*) FROM c2", "")
	if got, err := run(t, other, "SELECT x FROM c2"); err != nil || got == "" {
		t.Fatalf("another session's c2 after the rollback: %q, %v", got, err)
	}
	// A committed one stays.
	mustRun(t, s, "CREATE TABLE c3 AS SELECT id FROM src WHERE id > 7", "SELECT 3")
	mustRun(t, s, "SELECT count(*) FROM c3", "")
}

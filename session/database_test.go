package session

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// newEngine returns an engine over a fresh in-memory database whose
// DROP DATABASE waits only briefly for other sessions.
func newEngine(t *testing.T) *Engine {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	eng.DropWait = time.Millisecond
	return eng
}

func connectTo(t *testing.T, eng *Engine, user, database string) *Session {
	t.Helper()
	s, err := eng.Connect(user, database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func wantError(t *testing.T, s *Session, q string, code pgerror.Code, message string) *pgerror.Error {
	t.Helper()
	_, err := run(t, s, q)
	pe := pgerror.Convert(err)
	if err == nil || pe.Code != code || pe.Message != message {
		t.Fatalf("%s: got %v (%s), want %s %q", q, err, pgerror.GetCode(err), code, message)
	}
	return pe
}

func TestConnectToMissingDatabase(t *testing.T) {
	eng := newEngine(t)
	_, err := eng.Connect("u", "nosuch")
	if pe := pgerror.Convert(err); err == nil || pe.Code != pgerror.InvalidCatalogName || pe.Message != `database "nosuch" does not exist` {
		t.Fatalf("connecting to a missing database: %v", err)
	}
	eng.CreateDatabases = true
	s := connectTo(t, eng, "alice", "fresh")
	mustRun(t, s, "SELECT current_database()", "columns current_database:name; fresh; SELECT 1")
	d, err := eng.db.LookupDatabase("fresh")
	if err != nil || d.Owner != "alice" {
		t.Fatalf("created database: %+v, %v", d, err)
	}
	// A second connection finds it.
	connectTo(t, eng, "bob", "fresh")
}

func TestCreateAndDropDatabase(t *testing.T) {
	eng := newEngine(t)
	s := connectTo(t, eng, "u", "postgres")
	mustRun(t, s, "CREATE DATABASE d1", "CREATE DATABASE")
	wantError(t, s, "CREATE DATABASE d1", pgerror.DuplicateDatabase, `database "d1" already exists`)
	wantError(t, s, "BEGIN; CREATE DATABASE d2", pgerror.ActiveSQLTransaction, "CREATE DATABASE cannot run inside a transaction block")
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	wantError(t, s, "CREATE DATABASE d2; SELECT 1", pgerror.ActiveSQLTransaction, "CREATE DATABASE cannot run inside a transaction block")
	wantError(t, s, "BEGIN; DROP DATABASE d1", pgerror.ActiveSQLTransaction, "DROP DATABASE cannot run inside a transaction block")
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	wantError(t, s, "DROP DATABASE nosuch", pgerror.InvalidCatalogName, `database "nosuch" does not exist`)
	if got := runReport(t, s, "DROP DATABASE IF EXISTS nosuch"); !strings.Contains(got, `NOTICE 00000 database "nosuch" does not exist, skipping; DROP DATABASE`) {
		t.Fatalf("DROP DATABASE IF EXISTS: %s", got)
	}
	wantError(t, s, "DROP DATABASE postgres", pgerror.ObjectInUse, "cannot drop the currently open database")
	mustRun(t, s, "SELECT datname FROM pg_database ORDER BY datname", "columns datname:name; d1; postgres; SELECT 2")
	mustRun(t, s, "ALTER DATABASE d1 RENAME TO d3", "ALTER DATABASE")
	wantError(t, s, "ALTER DATABASE postgres RENAME TO p2", pgerror.FeatureNotSupported, "current database cannot be renamed")
	wantError(t, s, "ALTER DATABASE d3 RENAME TO postgres", pgerror.DuplicateDatabase, `database "postgres" already exists`)
	mustRun(t, s, "DROP DATABASE d3", "DROP DATABASE")
	mustRun(t, s, "SELECT datname FROM pg_database", "columns datname:name; postgres; SELECT 1")
}

// TestDatabasePrivileges: with authentication on, only superusers and
// roles with CREATEDB create databases, and only owners and superusers
// drop them.
func TestDatabasePrivileges(t *testing.T) {
	eng := newEngine(t)
	eng.AuthEnabled = true
	db := eng.db
	for _, r := range []storage.Role{{Name: "root", Login: true, Superuser: true}, {Name: "bob", Login: true}, {Name: "carol", Login: true}} {
		if err := db.CreateRoleWith(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	root := connectTo(t, eng, "root", "postgres")
	bob := connectTo(t, eng, "bob", "postgres")
	carol := connectTo(t, eng, "carol", "postgres")
	wantError(t, bob, "CREATE DATABASE b", pgerror.InsufficientPrivilege, "permission denied to create database")
	mustRun(t, root, "ALTER ROLE bob CREATEDB", "ALTER ROLE")
	mustRun(t, root, "SELECT rolname, rolcreatedb FROM pg_roles WHERE rolname IN ('bob', 'carol') ORDER BY 1",
		"columns rolname:name,rolcreatedb:boolean; bob|t; carol|f; SELECT 2")
	mustRun(t, bob, "CREATE DATABASE b", "CREATE DATABASE")
	wantError(t, bob, "CREATE DATABASE b2 OWNER carol", pgerror.InsufficientPrivilege, `must be able to SET ROLE "carol"`)
	mustRun(t, root, "CREATE DATABASE c OWNER carol", "CREATE DATABASE")
	mustRun(t, root, "SELECT d.datname, r.rolname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba ORDER BY 1",
		"columns datname:name,rolname:name; b|bob; c|carol; postgres|root; SELECT 3")
	wantError(t, carol, "DROP DATABASE b", pgerror.InsufficientPrivilege, "must be owner of database b")
	wantError(t, bob, "DROP DATABASE postgres", pgerror.InsufficientPrivilege, "must be owner of database postgres")
	mustRun(t, carol, "DROP DATABASE c", "DROP DATABASE")
	mustRun(t, bob, "DROP DATABASE b", "DROP DATABASE")
	mustRun(t, root, "CREATE ROLE dave CREATEDB LOGIN", "CREATE ROLE")
	if r, err := db.Role("dave"); err != nil || !r.CreateDB {
		t.Fatalf("dave: %+v, %v", r, err)
	}
}

// TestTablesOfOneDatabaseInvisibleFromAnother runs, in each of two
// databases, what clients read the catalog with: every one sees its own
// tables only.
func TestTablesOfOneDatabaseInvisibleFromAnother(t *testing.T) {
	eng := newEngine(t)
	a := connectTo(t, eng, "u", "postgres")
	mustRun(t, a, "CREATE DATABASE other", "CREATE DATABASE")
	b := connectTo(t, eng, "u", "other")
	mustRun(t, a, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'in postgres')", "")
	mustRun(t, a, "CREATE TABLE only_pg (x int)", "CREATE TABLE")
	mustRun(t, b, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (2, 'in other'), (3, 'also')", "")
	mustRun(t, a, "SELECT id, v FROM t", "columns id:integer,v:text; 1|in postgres; SELECT 1")
	mustRun(t, b, "SELECT id, v FROM t ORDER BY id", "columns id:integer,v:text; 2|in other; 3|also; SELECT 2")
	wantCode(t, b, "SELECT * FROM only_pg", pgerror.UndefinedTable)
	wantCode(t, b, "INSERT INTO only_pg VALUES (1)", pgerror.UndefinedTable)
	wantCode(t, b, "DROP TABLE only_pg", pgerror.UndefinedTable)
	mustRun(t, b, "CREATE TABLE only_pg (y text)", "CREATE TABLE") // the name is free there
	mustRun(t, a, "CREATE TABLE pg_side (z int)", "CREATE TABLE")
	mustRun(t, b, "CREATE TABLE other_side (w int)", "CREATE TABLE")

	queries := []struct{ name, sql string }{
		{"pg_class", "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY 1"},
		{"pg_tables", "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"},
		{"information_schema.tables", "SELECT table_catalog, table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 2"},
		{"information_schema.columns", "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2"},
		{"pg_attribute", "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'only_pg' AND a.attnum > 0 ORDER BY 1"},
		// psql's \d
		{`\d`, `SELECT n.nspname as "Schema", c.relname as "Name" FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ` +
			`WHERE c.relkind IN ('r','p','v','m','S','f','') AND n.nspname <> 'pg_catalog' AND n.nspname !~ '^pg_toast' AND n.nspname <> 'information_schema' ` +
			`AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2`},
		// psql's \d only_pg, first query
		{`\d only_pg`, `SELECT c.oid, n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ` +
			`WHERE c.relname OPERATOR(pg_catalog.~) '^(only_pg)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3`},
		{"to_regclass", "SELECT to_regclass('only_pg') IS NOT NULL"},
		{"current_database", "SELECT current_database()"},
	}
	want := map[string][2]string{
		"pg_class":                   {"only_pg; pg_side; t", "only_pg; other_side; t"},
		"pg_tables":                  {"only_pg; pg_side; t", "only_pg; other_side; t"},
		"information_schema.tables":  {"postgres|only_pg; postgres|pg_side; postgres|t", "other|only_pg; other|other_side; other|t"},
		"information_schema.columns": {"only_pg|x; pg_side|z; t|id; t|v", "only_pg|y; other_side|w; t|id; t|v"},
		"pg_attribute":               {"x", "y"},
		`\d`:                         {"public|only_pg; public|pg_side; public|t", "public|only_pg; public|other_side; public|t"},
		"to_regclass":                {"t", "t"},
		"current_database":           {"postgres", "other"},
	}
	oids := map[string]string{}
	for _, q := range queries {
		for i, s := range []*Session{a, b} {
			got, err := run(t, s, q.sql)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			rows := strings.Split(got, "; ")
			rows = rows[1 : len(rows)-1]
			if q.name == `\d only_pg` {
				if len(rows) != 1 {
					t.Fatalf(`\d only_pg in database %d: %v`, i, rows)
				}
				oids[s.Database] = strings.SplitN(rows[0], "|", 2)[0]
				continue
			}
			if g := strings.Join(rows, "; "); g != want[q.name][i] {
				t.Errorf("%s in %s: %s, want %s", q.name, s.Database, g, want[q.name][i])
			}
		}
	}
	if oids["postgres"] == oids["other"] {
		t.Fatalf("the two only_pg tables have one OID %s", oids["postgres"])
	}
	// The \d query of one database's table OID finds nothing in the other.
	mustRun(t, b, "SELECT count(*) FROM pg_attribute WHERE attrelid = "+oids["postgres"], "columns count:bigint; 0; SELECT 1")
}

func TestDropDatabaseInUse(t *testing.T) {
	eng := newEngine(t)
	s := connectTo(t, eng, "u", "postgres")
	mustRun(t, s, "CREATE DATABASE busy", "CREATE DATABASE")
	other, err := eng.Connect("u", "busy")
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, other, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)", "")
	pe := wantError(t, s, "DROP DATABASE busy", pgerror.ObjectInUse, `database "busy" is being accessed by other users`)
	if pe.Detail != "There is 1 other session using the database." {
		t.Fatalf("detail %q", pe.Detail)
	}
	third := connectTo(t, eng, "u", "busy")
	pe = wantError(t, s, "DROP DATABASE busy", pgerror.ObjectInUse, `database "busy" is being accessed by other users`)
	if pe.Detail != "There are 2 other sessions using the database." {
		t.Fatalf("detail %q", pe.Detail)
	}
	// Still there, tables and all.
	mustRun(t, other, "SELECT x FROM t", "columns x:integer; 1; SELECT 1")
	other.Close()
	third.Close()
	mustRun(t, s, "DROP DATABASE busy", "DROP DATABASE")
	if _, err := eng.Connect("u", "busy"); pgerror.GetCode(err) != pgerror.InvalidCatalogName {
		t.Fatalf("connecting to a dropped database: %v", err)
	}
	if n := len(eng.db.Catalog(other.dbOID).Tables()); n != 0 {
		t.Fatalf("the dropped database keeps %d tables", n)
	}
}

func TestDropDatabaseForce(t *testing.T) {
	eng := newEngine(t)
	s := connectTo(t, eng, "u", "postgres")
	mustRun(t, s, "CREATE DATABASE busy", "CREATE DATABASE")
	var terminated atomic.Int32
	for range 2 {
		o, err := eng.Connect("u", "busy")
		if err != nil {
			t.Fatal(err)
		}
		// As the wire layer does: the connection ends, then the session
		// is closed by its handler.
		o.OnTerminate(func() {
			terminated.Add(1)
			go o.Close()
		})
		mustRun(t, o, "CREATE TABLE IF NOT EXISTS t (x int)", "")
	}
	mustRun(t, s, "DROP DATABASE busy WITH (FORCE)", "DROP DATABASE")
	if terminated.Load() != 2 {
		t.Fatalf("%d sessions terminated, want 2", terminated.Load())
	}
	if _, err := eng.db.LookupDatabase("busy"); err == nil {
		t.Fatal("database still there")
	}
}

// TestConnectWhileDropping: while a database is being dropped no
// session may connect to it.
func TestConnectWhileDropping(t *testing.T) {
	eng := newEngine(t)
	s := connectTo(t, eng, "u", "postgres")
	mustRun(t, s, "CREATE DATABASE d", "CREATE DATABASE")
	d, _ := eng.db.LookupDatabase("d")
	if n := eng.conns.close(d.OID, 0); n != 0 {
		t.Fatalf("%d sessions", n)
	}
	if _, err := eng.Connect("u", "d"); pgerror.GetCode(err) != pgerror.InvalidCatalogName {
		t.Fatalf("connecting to a database being dropped: %v", err)
	}
	eng.conns.reopen(d.OID)
	connectTo(t, eng, "u", "d")
}

package session

import (
	"context"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// privEngine is an engine with password authentication on, a superuser
// admin and the login roles alice and bob, and admin's tables t (with a
// serial column) and v (vectors).
func privEngine(t *testing.T) (*Engine, *Session) {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	eng.AuthEnabled = true
	if err := db.CreateRole("admin", true, true, nil); err != nil {
		t.Fatal(err)
	}
	admin := connect(t, eng, "admin")
	for _, q := range []string{
		"CREATE ROLE alice LOGIN", "CREATE ROLE bob LOGIN",
		"CREATE TABLE t (id serial, x int)", "INSERT INTO t (x) VALUES (1), (2)",
		"CREATE TABLE v (id int, e vector(3))", "INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]')",
	} {
		mustRun(t, admin, q, "")
	}
	return eng, admin
}

func denied(t *testing.T, s *Session, q, msg string) {
	t.Helper()
	_, err := run(t, s, q)
	if pgerror.GetCode(err) != pgerror.InsufficientPrivilege || msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: got %v, want 42501 %s", q, err, msg)
	}
}

func runCopyIn(t *testing.T, s *Session, q, data string) error {
	t.Helper()
	r := &recorder{copyData: strings.NewReader(data)}
	return s.ExecSimple(context.Background(), q, r)
}

// TestPrivilegesPerStatement checks each statement path of a role
// without, then with, the privilege it needs.
func TestPrivilegesPerStatement(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	mustRun(t, admin, "GRANT SELECT ON v TO alice", "GRANT")
	cases := []struct {
		q     string
		grant string
	}{
		{"SELECT x FROM t", "SELECT"},
		{"SELECT count(*) FROM v WHERE id IN (SELECT id FROM t)", "SELECT"},
		{"WITH c AS (SELECT x FROM t) SELECT * FROM c", "SELECT"},
		{"SELECT 1 FROM v JOIN t ON true", "SELECT"},
		{"COPY t TO STDOUT", "SELECT"},
		{"COPY (SELECT x FROM t) TO STDOUT WITH (FORMAT tensor)", "SELECT"},
		{"COPY t (x) TO GPU", "SELECT"},
		{"EXPLAIN SELECT * FROM t", "SELECT"},
		{"INSERT INTO t (id, x) VALUES (10, 3)", "INSERT"},
		{"UPDATE t SET x = 5", "UPDATE"},
		{"DELETE FROM t", "DELETE"},
		{"TRUNCATE t", "TRUNCATE"},
	}
	for _, c := range cases {
		denied(t, alice, c.q, "permission denied for table t")
		mustRun(t, admin, "GRANT "+c.grant+" ON t TO alice", "GRANT")
		if _, err := run(t, alice, c.q); err != nil {
			t.Fatalf("%s after GRANT %s: %v", c.q, c.grant, err)
		}
		mustRun(t, admin, "REVOKE ALL ON t FROM alice", "REVOKE")
	}
	// SELECT ... FOR UPDATE needs UPDATE as well.
	mustRun(t, admin, "GRANT SELECT ON t TO alice", "GRANT")
	denied(t, alice, "SELECT x FROM t FOR UPDATE", "permission denied for table t")
	mustRun(t, alice, "SELECT (SELECT count(*) FROM t) FOR SHARE", "")
	mustRun(t, admin, "GRANT UPDATE ON t TO alice", "GRANT")
	mustRun(t, alice, "SELECT x FROM t FOR UPDATE", "")
	mustRun(t, admin, "REVOKE ALL ON t FROM alice", "REVOKE")
	// A read of the rows in UPDATE and DELETE (WHERE, SET x = x, RETURNING)
	// needs SELECT as well.
	mustRun(t, admin, "GRANT UPDATE, DELETE ON t TO alice", "GRANT")
	denied(t, alice, "UPDATE t SET x = x + 1", "permission denied for table t")
	denied(t, alice, "DELETE FROM t WHERE x = 1", "permission denied for table t")
	denied(t, alice, "UPDATE t SET x = 1 RETURNING id", "permission denied for table t")
	mustRun(t, admin, "GRANT SELECT ON t TO alice", "GRANT")
	mustRun(t, alice, "UPDATE t SET x = x + 1 WHERE x > 0", "")
	// INSERT ... SELECT needs SELECT on what it reads.
	mustRun(t, admin, "REVOKE ALL ON t FROM alice", "REVOKE")
	mustRun(t, admin, "GRANT INSERT ON t TO alice", "GRANT")
	mustRun(t, admin, "REVOKE SELECT ON v FROM alice", "REVOKE")
	denied(t, alice, "INSERT INTO t (id, x) SELECT id, id FROM v", "permission denied for table v")
	// A serial column's default takes the sequence's next value, which
	// needs USAGE on the sequence, as in PostgreSQL.
	denied(t, alice, "INSERT INTO t (x) VALUES (7)", "permission denied for sequence t_id_seq")
	mustRun(t, admin, "GRANT USAGE ON SEQUENCE t_id_seq TO alice", "GRANT")
	mustRun(t, alice, "INSERT INTO t (x) VALUES (7)", "INSERT 0 1")
	// COPY FROM needs INSERT.
	mustRun(t, admin, "REVOKE INSERT ON t FROM alice", "REVOKE")
	if err := runCopyIn(t, alice, "COPY t (id, x) FROM STDIN", "20\t1\n"); pgerror.GetCode(err) != pgerror.InsufficientPrivilege {
		t.Fatalf("COPY FROM without INSERT: %v", err)
	}
	mustRun(t, admin, "GRANT INSERT ON t TO alice", "GRANT")
	if err := runCopyIn(t, alice, "COPY t (id, x) FROM STDIN", "20\t1\n"); err != nil {
		t.Fatalf("COPY FROM with INSERT: %v", err)
	}
	// Vector search.
	q := "SELECT id FROM v ORDER BY e <-> '[1,0,0]' LIMIT 1"
	denied(t, alice, q, "permission denied for table v")
	mustRun(t, admin, "GRANT SELECT ON v TO alice", "GRANT")
	mustRun(t, alice, q, "columns id:integer; 1; SELECT 1")
	// The catalog stays readable.
	mustRun(t, alice, "SELECT count(*) > 0 FROM pg_class", "columns ?column?:boolean; t; SELECT 1")
}

// TestOwnership checks that only owners and superusers drop, index,
// alter, grant on and vacuum a table.
func TestOwnership(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	bob := connect(t, eng, "bob")
	denied(t, alice, "DROP TABLE t", "must be owner of table t")
	denied(t, alice, "CREATE INDEX ON v USING hnsw (e vector_l2_ops)", "must be owner of table v")
	denied(t, alice, "ALTER TABLE t OWNER TO alice", "must be owner of table t")
	// GRANT without any privilege is 42501; with a privilege but not its
	// grant option, a warning and nothing granted.
	denied(t, alice, "GRANT SELECT ON t TO bob", "permission denied for table t")
	mustRun(t, admin, "GRANT SELECT ON t TO alice", "GRANT")
	mustRun(t, alice, "GRANT SELECT ON t TO bob", "GRANT")
	denied(t, bob, "SELECT * FROM t", "permission denied for table t")
	mustRun(t, admin, "GRANT SELECT ON t TO alice WITH GRANT OPTION", "GRANT")
	mustRun(t, alice, "GRANT SELECT ON t TO bob", "GRANT")
	mustRun(t, bob, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	// Revoking alice's grant option needs CASCADE for bob's grant.
	wantCode(t, admin, "REVOKE GRANT OPTION FOR SELECT ON t FROM alice", pgerror.DependentObjectsStillExist)
	mustRun(t, admin, "REVOKE GRANT OPTION FOR SELECT ON t FROM alice CASCADE", "REVOKE")
	denied(t, bob, "SELECT * FROM t", "")
	mustRun(t, alice, "SELECT count(*) FROM t", "")

	// VACUUM of another's table: a warning, skipped.
	mustRun(t, alice, "VACUUM t", "VACUUM")
	// Creating in schema public needs CREATE on it (PostgreSQL 15).
	denied(t, alice, "CREATE TABLE mine (a int)", "permission denied for schema public")
	mustRun(t, admin, "GRANT CREATE ON SCHEMA public TO alice, bob", "GRANT")
	mustRun(t, alice, "CREATE TABLE mine (a int)", "CREATE TABLE")
	mustRun(t, alice, "INSERT INTO mine VALUES (1)", "INSERT 0 1")
	denied(t, bob, "SELECT * FROM mine", "permission denied for table mine")
	denied(t, bob, "DROP TABLE mine", "must be owner of table mine")
	mustRun(t, alice, "ALTER TABLE mine OWNER TO alice", "ALTER TABLE")
	denied(t, alice, "ALTER TABLE mine OWNER TO bob", "must be member of role \"bob\"")
	mustRun(t, admin, "ALTER TABLE mine OWNER TO bob", "ALTER TABLE")
	mustRun(t, bob, "SELECT * FROM mine", "columns a:integer; 1; SELECT 1")
	mustRun(t, bob, "DROP TABLE mine", "DROP TABLE")
	mustRun(t, admin, "DROP TABLE t", "DROP TABLE")
}

// TestPrivilegesPrepared checks that a REVOKE holds for a statement
// prepared before it: privileges are checked at every Execute.
func TestPrivilegesPrepared(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	mustRun(t, admin, "GRANT SELECT, INSERT ON t TO alice", "GRANT")
	ctx := context.Background()
	for _, q := range []string{"SELECT x FROM t WHERE x > $1", "INSERT INTO t (id, x) VALUES (100, $1)"} {
		if _, err := alice.Prepare("", q, nil); err != nil {
			t.Fatal(err)
		}
		exec := func() error {
			if _, err := alice.Bind("", "", nil, [][]byte{[]byte("0")}); err != nil {
				return err
			}
			_, err := alice.Execute(ctx, "", 0, &recorder{})
			if err == nil {
				err = alice.Sync()
			} else {
				_ = alice.Sync()
			}
			return err
		}
		if err := exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		mustRun(t, admin, "REVOKE SELECT, INSERT ON t FROM alice", "REVOKE")
		if err := exec(); pgerror.GetCode(err) != pgerror.InsufficientPrivilege {
			t.Fatalf("%s after REVOKE: %v", q, err)
		}
		mustRun(t, admin, "GRANT SELECT, INSERT ON t TO alice", "GRANT")
	}
}

// TestMembership checks that privileges come through roles a role
// inherits from, not with NOINHERIT until SET ROLE, and from PUBLIC.
func TestMembership(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	bob := connect(t, eng, "bob")
	mustRun(t, admin, "CREATE ROLE staff", "CREATE ROLE")
	mustRun(t, admin, "GRANT SELECT ON t TO staff", "GRANT")
	mustRun(t, admin, "GRANT staff TO alice, bob", "GRANT ROLE")
	mustRun(t, admin, "ALTER ROLE bob NOINHERIT", "ALTER ROLE")
	mustRun(t, alice, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	denied(t, bob, "SELECT count(*) FROM t", "permission denied for table t")
	mustRun(t, bob, "SET ROLE staff", "SET")
	mustRun(t, bob, "SELECT current_user, session_user", "columns current_user:name,session_user:name; staff|bob; SELECT 1")
	mustRun(t, bob, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	mustRun(t, bob, "RESET ROLE", "RESET")
	denied(t, bob, "SELECT count(*) FROM t", "")
	denied(t, alice, "SET ROLE admin", "permission denied to set role \"admin\"")
	// Only a role with the admin option grants membership.
	denied(t, alice, "GRANT staff TO bob", "must have admin option on role \"staff\"")
	mustRun(t, admin, "REVOKE staff FROM alice", "REVOKE ROLE")
	denied(t, alice, "SELECT count(*) FROM t", "")
	// PUBLIC.
	mustRun(t, admin, "GRANT SELECT ON t TO PUBLIC", "GRANT")
	mustRun(t, alice, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	mustRun(t, admin, "SELECT relacl FROM pg_class WHERE relname = 't'",
		"columns relacl:text; {admin=arwdDxt/admin,staff=r/admin,=r/admin}; SELECT 1")
	mustRun(t, admin, "SELECT r.rolname, m.rolname, admin_option FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member",
		"columns rolname:name,rolname:name,admin_option:boolean; staff|bob|f; SELECT 1")
}

// TestDefaultPrivileges checks that ALTER DEFAULT PRIVILEGES gives the
// tables a role creates afterwards their ACL.
func TestDefaultPrivileges(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	mustRun(t, admin, "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO alice", "ALTER DEFAULT PRIVILEGES")
	mustRun(t, admin, "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT INSERT ON TABLES TO PUBLIC", "ALTER DEFAULT PRIVILEGES")
	mustRun(t, admin, "CREATE TABLE d (a int)", "CREATE TABLE")
	mustRun(t, admin, "SELECT relacl FROM pg_class WHERE relname = 'd'",
		"columns relacl:text; {admin=arwdDxt/admin,alice=r/admin,=a/admin}; SELECT 1")
	mustRun(t, alice, "INSERT INTO d VALUES (1)", "INSERT 0 1")
	mustRun(t, alice, "SELECT * FROM d", "columns a:integer; 1; SELECT 1")
	denied(t, alice, "SELECT * FROM t", "")
	mustRun(t, admin, "ALTER DEFAULT PRIVILEGES REVOKE SELECT ON TABLES FROM alice", "ALTER DEFAULT PRIVILEGES")
	mustRun(t, admin, "ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE INSERT ON TABLES FROM PUBLIC", "ALTER DEFAULT PRIVILEGES")
	mustRun(t, admin, "CREATE TABLE e (a int)", "CREATE TABLE")
	mustRun(t, admin, "SELECT relacl IS NULL FROM pg_class WHERE relname = 'e'", "columns ?column?:boolean; t; SELECT 1")
}

// TestPrivilegeFunctions checks has_*_privilege and pg_has_role.
func TestPrivilegeFunctions(t *testing.T) {
	eng, admin := privEngine(t)
	alice := connect(t, eng, "alice")
	mustRun(t, admin, "CREATE ROLE staff", "CREATE ROLE")
	mustRun(t, admin, "GRANT staff TO alice", "GRANT ROLE")
	mustRun(t, admin, "GRANT SELECT ON t TO staff WITH GRANT OPTION", "GRANT")
	for q, want := range map[string]string{
		"SELECT has_table_privilege('t', 'SELECT')":                                   "t",
		"SELECT has_table_privilege('t', 'INSERT')":                                   "f",
		"SELECT has_table_privilege('t', 'insert, select')":                           "t",
		"SELECT has_table_privilege('t', 'SELECT WITH GRANT OPTION')":                 "t",
		"SELECT has_table_privilege('bob', 't', 'SELECT')":                            "f",
		"SELECT has_table_privilege('admin', 't', 'TRUNCATE')":                        "t",
		"SELECT has_table_privilege('t'::regclass, 'SELECT')":                         "t",
		"SELECT has_table_privilege(oid, 'SELECT') FROM pg_class WHERE relname = 'v'": "f",
		"SELECT has_table_privilege(999999, 'SELECT') IS NULL":                        "t",
		"SELECT has_table_privilege('pg_class', 'SELECT')":                            "t",
		"SELECT has_any_column_privilege('t', 'SELECT')":                              "t",
		"SELECT has_column_privilege('t', 'x', 'SELECT')":                             "t",
		"SELECT has_schema_privilege('public', 'USAGE')":                              "t",
		"SELECT has_schema_privilege('public', 'CREATE')":                             "f",
		"SELECT has_schema_privilege('admin', 'public', 'CREATE')":                    "t",
		"SELECT has_database_privilege('postgres', 'CONNECT')":                        "t",
		"SELECT has_database_privilege('postgres', 'CREATE')":                         "f",
		"SELECT pg_has_role('staff', 'MEMBER')":                                       "t",
		"SELECT pg_has_role('staff', 'USAGE')":                                        "t",
		"SELECT pg_has_role('staff', 'MEMBER WITH ADMIN OPTION')":                     "f",
		"SELECT pg_has_role('bob', 'staff', 'MEMBER')":                                "f",
	} {
		got, err := run(t, alice, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if parts := strings.Split(got, "; "); len(parts) < 2 || parts[1] != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
	for q, code := range map[string]pgerror.Code{
		"SELECT has_table_privilege('nosuch', 'SELECT')":      pgerror.UndefinedTable,
		"SELECT has_table_privilege('t', 'FLY')":              pgerror.InvalidParameterValue,
		"SELECT has_table_privilege('nobody', 't', 'SELECT')": pgerror.UndefinedObject,
		"SELECT has_column_privilege('t', 'nope', 'SELECT')":  pgerror.UndefinedColumn,
	} {
		wantCode(t, alice, q, code)
	}
	// information_schema shows alice only the tables she has privileges on.
	mustRun(t, alice, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
		"columns table_name:name; t; SELECT 1")
	mustRun(t, alice, "SELECT grantor, grantee, privilege_type, is_grantable FROM information_schema.table_privileges WHERE table_name = 't'",
		"columns grantor:name,grantee:name,privilege_type:text,is_grantable:text; admin|staff|SELECT|YES; SELECT 1")
}

// TestTrustIsSuperuser checks that under trust authentication every user
// is a superuser, as before privileges, until SET ROLE.
func TestTrustIsSuperuser(t *testing.T) {
	eng, admin := privEngine(t)
	eng.AuthEnabled = false
	alice := connect(t, eng, "alice")
	mustRun(t, alice, "SELECT count(*) FROM t", "columns count:bigint; 2; SELECT 1")
	mustRun(t, alice, "SELECT has_table_privilege('t', 'DELETE')", "columns has_table_privilege:boolean; t; SELECT 1")
	mustRun(t, alice, "SET ROLE bob", "SET")
	denied(t, alice, "SELECT count(*) FROM t", "permission denied for table t")
	mustRun(t, alice, "RESET ROLE", "RESET")
	mustRun(t, alice, "DROP TABLE t", "DROP TABLE")
	_ = admin
}

// TestPrivilegesInOtherDatabase: the checks read the session's own
// database: a serial column's sequence in a database other than postgres
// needs its USAGE grant too.
func TestPrivilegesInOtherDatabase(t *testing.T) {
	eng, admin := privEngine(t)
	mustRun(t, admin, "CREATE DATABASE other", "CREATE DATABASE")
	root := connectTo(t, eng, "admin", "other")
	for _, q := range []string{"CREATE TABLE s (id serial, x int)", "GRANT INSERT ON s TO alice"} {
		mustRun(t, root, q, "")
	}
	alice := connectTo(t, eng, "alice", "other")
	denied(t, alice, "INSERT INTO s (x) VALUES (7)", "permission denied for sequence s_id_seq")
	denied(t, alice, "SELECT * FROM s", "permission denied for table s")
	mustRun(t, root, "GRANT USAGE ON SEQUENCE s_id_seq TO alice", "GRANT")
	mustRun(t, alice, "INSERT INTO s (x) VALUES (7)", "INSERT 0 1")
}

// TestSetRoleIsSuperuser: is_superuser follows SET ROLE and is reported
// to the client, as PostgreSQL does; a SET LOCAL ROLE's ends with its
// transaction.
func TestSetRoleIsSuperuser(t *testing.T) {
	_, admin := privEngine(t)
	if err := admin.Startup(map[string]string{}, true); err != nil { // as the wire layer starts it
		t.Fatal(err)
	}
	mustRun(t, admin, "GRANT alice TO admin", "")
	if got := runReport(t, admin, "SET ROLE alice"); !strings.Contains(got, "is_superuser=off") {
		t.Fatalf("SET ROLE alice reported %q", got)
	}
	mustRun(t, admin, "SHOW is_superuser", "columns is_superuser:text; off; SHOW")
	if got := runReport(t, admin, "RESET ROLE"); !strings.Contains(got, "is_superuser=on") {
		t.Fatalf("RESET ROLE reported %q", got)
	}
	mustRun(t, admin, "BEGIN", "BEGIN")
	mustRun(t, admin, "SET LOCAL ROLE alice", "SET")
	mustRun(t, admin, "SHOW is_superuser", "columns is_superuser:text; off; SHOW")
	mustRun(t, admin, "COMMIT", "COMMIT")
	mustRun(t, admin, "SHOW is_superuser", "columns is_superuser:text; on; SHOW")
	mustRun(t, admin, "SET ROLE alice", "SET")
	mustRun(t, admin, "RESET ALL", "RESET")
	mustRun(t, admin, "SHOW is_superuser", "columns is_superuser:text; on; SHOW")
}

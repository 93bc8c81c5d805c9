package psqlcompat

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// privilegeSetup makes the same roles, grants and memberships on both
// servers.
var privilegeSetup = []string{
	"CREATE ROLE alice LOGIN",
	"CREATE ROLE bob",
	"CREATE ROLE staff",
	"CREATE ROLE carol LOGIN NOINHERIT",
	"GRANT staff TO alice",
	"GRANT staff TO carol WITH ADMIN OPTION",
	"CREATE TABLE g1 (a int)",
	"CREATE TABLE g2 (a int, b text)",
	"CREATE TABLE g3 (a int)",
	"CREATE TABLE g4 (a int)",
	"GRANT SELECT, INSERT ON g1 TO alice",
	"GRANT ALL ON g1 TO staff WITH GRANT OPTION",
	"GRANT SELECT ON g2 TO PUBLIC",
	"GRANT UPDATE, TRUNCATE ON g2, g3 TO bob, alice",
	"REVOKE INSERT ON g3 FROM postgres",
	"GRANT REFERENCES, TRIGGER ON g4 TO \"carol\"",
	"REVOKE ALL ON g4 FROM carol",
	"GRANT USAGE ON SCHEMA public TO bob",
}

// privilegeCommands are the meta-commands that show privileges and
// memberships.
var privilegeCommands = []string{
	`\dp`,
	`\dp g1`,
	`\z g2`,
	`\du`,
	`\dn+ public`,
	`SELECT grantor, grantee, table_name, privilege_type, is_grantable FROM information_schema.table_privileges WHERE table_schema = 'public' ORDER BY table_name, grantee, privilege_type;`,
	`SELECT has_table_privilege('alice', 'g1', 'DELETE'), has_table_privilege('alice', 'g1', 'DELETE WITH GRANT OPTION'), has_table_privilege('bob', 'g2', 'select'), has_table_privilege('carol', 'g1', 'SELECT'), pg_has_role('carol', 'staff', 'MEMBER'), pg_has_role('carol', 'staff', 'USAGE'), has_schema_privilege('bob', 'public', 'CREATE');`,
}

// TestPsqlPrivilegesMatchPostgres15 compares \dp, \du and the privilege
// functions for the same grants on deeplaked and PostgreSQL 15.
func TestPsqlPrivilegesMatchPostgres15(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	pgPort := startPostgres15(t)
	dlHost, dlPort := startDeeplaked(t)
	run := func(host, port, input string) string {
		t.Helper()
		cmd := exec.Command(psql, "-X", "-q", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=0")
		cmd.Stdin = strings.NewReader(input + "\n")
		cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGTZ=UTC", "PAGER=")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for _, q := range privilegeSetup {
		for _, port := range []string{pgPort, dlPort} {
			host := "127.0.0.1"
			if port == dlPort {
				host = dlHost
			}
			if out := run(host, port, q+";"); strings.Contains(out, "ERROR") {
				t.Fatalf("setup %q on %s: %s", q, port, out)
			}
		}
	}
	for _, c := range privilegeCommands {
		want := run("127.0.0.1", pgPort, c)
		got := run(dlHost, dlPort, c)
		if got != want {
			t.Errorf("%s:\n--- deeplaked\n%s--- PostgreSQL 15\n%s", c, got, want)
		}
	}
}

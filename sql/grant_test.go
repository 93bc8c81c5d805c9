package sql

import "testing"

func TestParseGrant(t *testing.T) {
	for _, q := range []string{
		"GRANT SELECT, INSERT ON t, u TO alice, PUBLIC WITH GRANT OPTION",
		"GRANT ALL PRIVILEGES ON ALL TABLES IN SCHEMA public TO alice GRANTED BY CURRENT_USER",
		"REVOKE GRANT OPTION FOR SELECT ON TABLE t FROM alice CASCADE",
		"GRANT USAGE, CREATE ON SCHEMA public TO bob",
		"GRANT USAGE ON SEQUENCE t_id_seq TO bob",
		"GRANT staff TO alice WITH ADMIN OPTION",
		"REVOKE ADMIN OPTION FOR staff FROM alice",
		"ALTER DEFAULT PRIVILEGES FOR ROLE owner IN SCHEMA public GRANT SELECT ON TABLES TO alice",
		"ALTER TABLE t OWNER TO bob",
	} {
		if _, err := Parse(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	st, err := Parse("GRANT SELECT, INSERT ON t, u TO alice, PUBLIC WITH GRANT OPTION")
	if err != nil {
		t.Fatal(err)
	}
	g := st[0].Stmt.(*Grant)
	if g.On != GrantOnTable || len(g.Objects) != 2 || len(g.Privileges) != 2 || g.Privileges[1] != "INSERT" ||
		len(g.Grantees) != 2 || g.Grantees[1].Kind != RolePublic || !g.GrantOption {
		t.Fatalf("%+v", g)
	}
	st, _ = Parse("REVOKE ADMIN OPTION FOR staff FROM alice")
	if gr := st[0].Stmt.(*GrantRole); !gr.Revoke || !gr.Admin || gr.Roles[0] != "staff" {
		t.Fatalf("%+v", gr)
	}
	st, _ = Parse("GRANT ALL ON t TO alice")
	if g := st[0].Stmt.(*Grant); g.Privileges != nil {
		t.Fatalf("ALL: %+v", g)
	}
	if _, err := Parse("ALTER TABLE t ADD COLUMN x int"); err == nil {
		t.Fatal("ALTER TABLE ADD COLUMN parsed")
	}
}

package storage

import (
	"errors"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// TestACLString checks the aclitem[] text against PostgreSQL's.
func TestACLString(t *testing.T) {
	acl := ACL{
		{Grantee: "owner", Grantor: "owner", Privs: TablePrivileges},
		{Grantee: "alice", Grantor: "owner", Privs: PrivSelect | PrivInsert, Grant: PrivSelect},
		{Grantor: "owner", Privs: PrivSelect},
		{Grantee: "Bob x", Grantor: "owner", Privs: PrivTruncate},
	}
	want := `{owner=arwdDxt/owner,alice=ar*/owner,=r/owner,"\"Bob x\"=D/owner"}`
	if got := acl.String(); got != want {
		t.Fatalf("ACL = %s, want %s", got, want)
	}
	if got := PublicSchemaDefaultACL().String(); got != "{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}" {
		t.Fatalf("schema public = %s", got)
	}
}

// TestACLPersist checks that owners, table and sequence ACLs, memberships,
// schema ACLs and default privileges survive a restart.
func TestACLPersist(t *testing.T) {
	dir := t.TempDir()
	open := func() *DB {
		db, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	for _, r := range []string{"owner", "alice", "staff"} {
		if err := db.CreateRole(r, true, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	desc := &TableDesc{Name: "t", Owner: "owner", Columns: []ColumnDesc{{Name: "id", Type: types.TypInt8, Serial: true}}}
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	a, err := db.Auth()
	if err != nil {
		t.Fatal(err)
	}
	acl, err := a.Apply(ObjectTable, nil, "owner", ACLChange{Grantees: []string{"alice", ""}, Grantor: "owner", Privs: PrivSelect})
	if err != nil {
		t.Fatal(err)
	}
	err = db.AlterTable("t", desc.ID, func(d *TableDesc) error {
		d.ACL = acl
		d.Columns[0].SeqACL = ACL{{Grantee: "alice", Grantor: "owner", Privs: PrivUsage}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if desc.ACL != nil {
		t.Fatal("AlterTable changed the shared descriptor")
	}
	if _, err := db.GrantMembership(Membership{Role: "staff", Member: "alice", Grantor: "owner", Admin: true}); err != nil {
		t.Fatal(err)
	}
	_, err = db.GrantMembership(Membership{Role: "alice", Member: "staff"})
	wantCode(t, err, pgerror.InvalidGrantOperation) // a cycle
	if err := db.SetSchemaACL(DefaultDatabase, "public", ACL{{Grantor: PublicSchemaOwner, Privs: PrivUsage | PrivCreate}}); err != nil {
		t.Fatal(err)
	}
	dp := DefaultPrivileges{Role: "owner", Kind: ObjectTable, ACL: ACL{{Grantee: "staff", Grantor: "owner", Privs: PrivSelect}}}
	if err := db.SetDefaultPrivileges(DefaultDatabase, dp); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open()
	defer db.Close()
	got, err := db.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != "owner" || got.ACL.String() != "{owner=arwdDxt/owner,alice=r/owner,=r/owner}" || got.Columns[0].SeqACL.String() != "{alice=U/owner}" {
		t.Fatalf("after restart: owner %q, acl %s, sequence %s", got.Owner, got.ACL, got.Columns[0].SeqACL)
	}
	a, err = db.Auth()
	if err != nil {
		t.Fatal(err)
	}
	if ms := a.MemberOf("alice"); len(ms) != 1 || ms[0].Role != "staff" || !ms[0].Admin {
		t.Fatalf("memberships after restart: %+v", ms)
	}
	if acl, err := db.SchemaACL(DefaultDatabase, "public"); err != nil || acl.String() != "{=UC/pg_database_owner}" {
		t.Fatalf("schema ACL after restart: %s, %v", acl, err)
	}
	if ds, err := db.DefaultPrivilegesList(DefaultDatabase); err != nil || len(ds) != 1 || ds[0].ACL.String() != "{staff=r/owner}" {
		t.Fatalf("default privileges after restart: %+v, %v", ds, err)
	}
	// A role that holds privileges or owns a table cannot be dropped.
	_, err = db.DropRole("alice", false)
	wantCode(t, err, pgerror.DependentObjectsStillExist)
	_, err = db.DropRole("owner", false)
	wantCode(t, err, pgerror.DependentObjectsStillExist)
}

// TestACLMask checks inheritance, NOINHERIT, PUBLIC and the owner's
// implicit grant options.
func TestACLMask(t *testing.T) {
	db := openMem(t, 0)
	for _, r := range []string{"owner", "alice", "bob", "staff"} {
		if err := db.CreateRole(r, true, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.GrantMembership(Membership{Role: "staff", Member: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GrantMembership(Membership{Role: "staff", Member: "bob"}); err != nil {
		t.Fatal(err)
	}
	no := false
	if err := db.AlterRole("bob", RoleChange{Inherit: &no}); err != nil {
		t.Fatal(err)
	}
	a, err := db.Auth()
	if err != nil {
		t.Fatal(err)
	}
	acl := ACL{{Grantee: "owner", Grantor: "owner", Privs: TablePrivileges}, {Grantee: "staff", Grantor: "owner", Privs: PrivSelect},
		{Grantor: "owner", Privs: PrivInsert}}
	for _, c := range []struct {
		role        string
		privs, gopt Privilege
	}{
		{"owner", TablePrivileges, TablePrivileges},
		{"alice", PrivSelect | PrivInsert, 0},
		{"bob", PrivInsert, 0}, // NOINHERIT: staff's privileges only after SET ROLE
		{"staff", PrivSelect | PrivInsert, 0},
	} {
		p, g := a.Mask(ObjectTable, acl, "owner", c.role)
		if p != c.privs || g != c.gopt {
			t.Errorf("Mask(%s) = %b, %b; want %b, %b", c.role, p, g, c.privs, c.gopt)
		}
	}
	if !a.IsMemberOf("bob", "staff") || a.HasPrivsOf("bob", "staff") || !a.HasPrivsOf("alice", "staff") {
		t.Error("membership of bob and alice in staff")
	}
}

// TestACLRevokeCascade checks that revoking a grant option takes what was
// granted with it only with CASCADE.
func TestACLRevokeCascade(t *testing.T) {
	a := &Auth{roles: map[string]*Role{}, memberOf: map[string][]Membership{}}
	acl, err := a.Apply(ObjectTable, nil, "o", ACLChange{Grantees: []string{"alice"}, Grantor: "o", Privs: PrivSelect, GrantOption: true})
	if err != nil {
		t.Fatal(err)
	}
	acl, _ = a.Apply(ObjectTable, acl, "o", ACLChange{Grantees: []string{"bob"}, Grantor: "alice", Privs: PrivSelect})
	if acl.String() != "{o=arwdDxt/o,alice=r*/o,bob=r/alice}" {
		t.Fatalf("acl = %s", acl)
	}
	_, err = a.Apply(ObjectTable, acl, "o", ACLChange{Revoke: true, Grantees: []string{"alice"}, Grantor: "o", Privs: PrivSelect})
	wantCode(t, err, pgerror.DependentObjectsStillExist)
	got, err := a.Apply(ObjectTable, acl, "o", ACLChange{Revoke: true, GrantOption: true, Grantees: []string{"alice"}, Grantor: "o", Privs: PrivSelect, Cascade: true})
	if err != nil || got.String() != "{o=arwdDxt/o,alice=r/o}" {
		t.Fatalf("REVOKE GRANT OPTION FOR ... CASCADE = %s, %v", got, err)
	}
	if NewOwner(got, "o", "p").String() != "{p=arwdDxt/p,alice=r/p}" {
		t.Fatalf("new owner: %s", NewOwner(got, "o", "p"))
	}
}

// TestDropRoleOtherDatabase: a role that owns a database, or a table of a
// database other than postgres, cannot be dropped either.
func TestDropRoleOtherDatabase(t *testing.T) {
	db := openMem(t, 0)
	for _, r := range []string{"dbowner", "tabowner"} {
		if err := db.CreateRole(r, true, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	d, err := db.CreateDatabase("other", "dbowner")
	if err != nil {
		t.Fatal(err)
	}
	desc := &TableDesc{Name: "t", Owner: "tabowner", Columns: []ColumnDesc{{Name: "x", Type: types.TypInt4}}}
	if _, err := db.Catalog(d.OID).CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	_, err = db.DropRole("dbowner", false)
	wantCode(t, err, pgerror.DependentObjectsStillExist)
	_, err = db.DropRole("tabowner", false)
	wantCode(t, err, pgerror.DependentObjectsStillExist)
	if pe := (*pgerror.Error)(nil); errors.As(err, &pe) && pe.Detail != "owner of table t in database other" {
		t.Fatalf("detail %q", pe.Detail)
	}
}

// TestAuthCache: the roles view is read once and kept until a role or a
// membership changes; every such write shows in the next view.
func TestAuthCache(t *testing.T) {
	db := openMem(t, 0)
	a1, err := db.Auth()
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := db.Auth(); a2 != a1 {
		t.Fatal("the view was read again with nothing changed")
	}
	view := func() *Auth {
		t.Helper()
		a, err := db.Auth()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if err := db.CreateRole("alice", true, false, nil); err != nil {
		t.Fatal(err)
	}
	if !view().Exists("alice") {
		t.Fatal("CREATE ROLE not seen")
	}
	if err := db.CreateRole("staff", false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GrantMembership(Membership{Role: "staff", Member: "alice"}); err != nil {
		t.Fatal(err)
	}
	if !view().IsMemberOf("alice", "staff") {
		t.Fatal("GRANT staff TO alice not seen")
	}
	if _, err := db.RevokeMembership("staff", "alice", false); err != nil {
		t.Fatal(err)
	}
	if view().IsMemberOf("alice", "staff") {
		t.Fatal("REVOKE staff FROM alice not seen")
	}
	super := true
	if err := db.AlterRole("alice", RoleChange{Superuser: &super}); err != nil {
		t.Fatal(err)
	}
	if !view().Superuser("alice") {
		t.Fatal("ALTER ROLE alice SUPERUSER not seen")
	}
	if _, err := db.DropRole("staff", false); err != nil {
		t.Fatal(err)
	}
	if view().Exists("staff") {
		t.Fatal("DROP ROLE staff not seen")
	}
}

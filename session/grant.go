package session

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/storage"
)

// GRANT, REVOKE, ALTER DEFAULT PRIVILEGES, ALTER TABLE ... OWNER TO and
// SET ROLE. Like role changes, they take effect at once and are not part
// of the surrounding transaction.

// roleName resolves a role specification; PUBLIC is "". A named role must
// exist (42704).
func (s *Session) roleName(a *storage.Auth, r sql.RoleRef) (string, error) {
	switch r.Kind {
	case sql.RolePublic:
		return "", nil
	case sql.RoleCurrentUser:
		return s.currentRole(), nil
	case sql.RoleSessionUser:
		return s.User, nil
	}
	if !a.Exists(r.Name) {
		return "", pgerror.Newf(pgerror.UndefinedObject, "role \"%s\" does not exist", r.Name)
	}
	return r.Name, nil
}

// grantPrivileges turns a GRANT's privilege names into the set for kind;
// nil is ALL.
func grantPrivileges(names []string, kind storage.ObjectKind, what string) (storage.Privilege, error) {
	if names == nil {
		return kind.All(), nil
	}
	var p storage.Privilege
	for _, n := range names {
		q, ok := storage.ParsePrivilege(n)
		if !ok {
			return 0, pgerror.Newf(pgerror.SyntaxError, "unrecognized privilege type \"%s\"", n)
		}
		if q&kind.All() == 0 {
			return 0, pgerror.Newf(pgerror.InvalidGrantOperation, "invalid privilege type %s for %s", q.Name(), what)
		}
		p |= q
	}
	return p, nil
}

// grantTarget is one object of a GRANT: a table, a serial column's
// sequence (col >= 0), or schema public (table nil).
type grantTarget struct {
	table *storage.TableDesc
	col   int
}

func (g grantTarget) name() string {
	if g.table == nil {
		return "public"
	}
	if g.col >= 0 {
		return sequenceName(g.table, g.col)
	}
	return g.table.Name
}

// grantTargets resolves the objects of st.
func (s *Session) grantTargets(st *sql.Grant) ([]grantTarget, error) {
	db := s.cat
	var out []grantTarget
	if st.AllInSchema {
		for _, nsp := range st.Objects {
			if nsp != "public" {
				return nil, pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", nsp)
			}
		}
		for _, t := range db.Tables() {
			if st.On == sql.GrantOnTable {
				out = append(out, grantTarget{table: t, col: -1})
				continue
			}
			for i, c := range t.Columns {
				if c.Serial {
					out = append(out, grantTarget{table: t, col: i})
				}
			}
		}
		return out, nil
	}
	for _, name := range st.Objects {
		if st.On == sql.GrantOnSchema {
			if name != "public" {
				return nil, pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", name)
			}
			out = append(out, grantTarget{col: -1})
			continue
		}
		if t, err := db.Table(name); err == nil {
			if st.On == sql.GrantOnSequence {
				return nil, pgerror.Newf(pgerror.WrongObjectType, "\"%s\" is not a sequence", name)
			}
			out = append(out, grantTarget{table: t, col: -1})
			continue
		}
		// A sequence, which GRANT ... ON [TABLE] names too.
		found := false
		for _, t := range db.Tables() {
			for i, c := range t.Columns {
				if c.Serial && sequenceName(t, i) == name {
					out = append(out, grantTarget{table: t, col: i})
					found = true
				}
			}
		}
		if !found {
			if st.On == sql.GrantOnSequence {
				return nil, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", name)
			}
			return nil, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", name)
		}
	}
	return out, nil
}

// execGrant runs GRANT or REVOKE of privileges, as PostgreSQL's
// ExecuteGrantStmt: each object's grantor is the role the current role
// acts as (the owner for its owner and superusers, else a role holding the
// grant options); privileges without the grant option are left out with
// a warning, and none at all on an object the role has no privilege on is
// 42501.
func (s *Session) execGrant(st *sql.Grant, w ResultWriter) error {
	tag := "GRANT"
	if st.Revoke {
		tag = "REVOKE"
	}
	if st.On == sql.GrantOnDatabase {
		return pgerror.New(pgerror.FeatureNotSupported, "GRANT and REVOKE on databases are not supported yet")
	}
	a, err := s.auth()
	if err != nil {
		return err
	}
	role := s.currentRole()
	if st.GrantedBy != nil {
		by, err := s.roleName(a, *st.GrantedBy)
		if err != nil {
			return err
		}
		if by != role {
			return pgerror.New(pgerror.FeatureNotSupported, "grantor must be current user")
		}
	}
	grantees := make([]string, 0, len(st.Grantees))
	for _, g := range st.Grantees {
		name, err := s.roleName(a, g)
		if err != nil {
			return err
		}
		if name == "" && st.GrantOption && !st.Revoke {
			return pgerror.New(pgerror.InvalidGrantOperation, "grant options can only be granted to roles")
		}
		grantees = append(grantees, name)
	}
	targets, err := s.grantTargets(st)
	if err != nil {
		return err
	}
	for _, tg := range targets {
		kind, what := storage.ObjectTable, "table"
		switch {
		case tg.table == nil:
			kind, what = storage.ObjectSchema, "schema"
		case tg.col >= 0:
			kind, what = storage.ObjectSequence, "sequence"
		}
		privs, err := grantPrivileges(st.Privileges, kind, what)
		if err != nil {
			return err
		}
		change := func(acl storage.ACL, owner string) (storage.ACL, error) {
			grantor, avail := a.BestGrantor(kind, acl, owner, role, privs)
			if avail == 0 {
				if p, g := a.Mask(kind, acl, owner, grantor); p|g == 0 {
					return nil, pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied for %s %s", what, tg.name())
				}
			}
			this := privs & avail
			msg := ""
			switch {
			case this == 0 && !st.Revoke:
				msg = "no privileges were granted for \"%s\""
			case this == 0:
				msg = "no privileges could be revoked for \"%s\""
			case this != privs && st.Privileges != nil && !st.Revoke:
				msg = "not all privileges were granted for \"%s\""
			case this != privs && st.Privileges != nil:
				msg = "not all privileges could be revoked for \"%s\""
			}
			if msg != "" {
				code := pgerror.Code("01007") // warning_privilege_not_granted
				if st.Revoke {
					code = pgerror.Code("01006") // warning_privilege_not_revoked
				}
				if err := s.notice(w, severityWarning, code, msg, tg.name()); err != nil {
					return nil, err
				}
			}
			return a.Apply(kind, acl, owner, storage.ACLChange{Revoke: st.Revoke, GrantOption: st.GrantOption,
				Grantees: grantees, Grantor: grantor, Privs: this, Cascade: st.Cascade})
		}
		if tg.table == nil {
			err = s.eng.db.UpdateSchemaACL(s.aclDatabase(), "public", func(acl storage.ACL) (storage.ACL, error) {
				if acl == nil {
					acl = storage.PublicSchemaDefaultACL()
				}
				return change(acl, storage.PublicSchemaOwner)
			})
		} else {
			err = s.cat.AlterTable(tg.table.Name, tg.table.ID, func(d *storage.TableDesc) error {
				owner := a.Owner(d)
				d.Owner = owner
				if tg.col >= 0 {
					acl, err := change(d.Columns[tg.col].SeqACL, owner)
					d.Columns[tg.col].SeqACL = acl
					return err
				}
				acl, err := change(d.ACL, owner)
				d.ACL = acl
				return err
			})
		}
		if err != nil {
			return err
		}
	}
	return w.WriteComplete(tag)
}

// execGrantRole runs GRANT role TO role and REVOKE role FROM role: the
// current role needs the admin option on each role granted (superusers
// have it).
func (s *Session) execGrantRole(st *sql.GrantRole, w ResultWriter) error {
	a, err := s.auth()
	if err != nil {
		return err
	}
	current := s.currentRole()
	if st.GrantedBy != nil {
		by, err := s.roleName(a, *st.GrantedBy)
		if err != nil {
			return err
		}
		if by != current {
			return pgerror.New(pgerror.FeatureNotSupported, "grantor must be current user")
		}
	}
	db := s.eng.db
	for _, r := range st.Roles {
		if !a.Exists(r) {
			return pgerror.Newf(pgerror.UndefinedObject, "role \"%s\" does not exist", r)
		}
		if !s.trusted() && !a.HasAdminOf(current, r) {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must have admin option on role \"%s\"", r)
		}
		for _, g := range st.Grantees {
			member, err := s.roleName(a, g)
			if err != nil {
				return err
			}
			if member == "" {
				return pgerror.New(pgerror.UndefinedObject, "role \"public\" does not exist")
			}
			if st.Revoke {
				ok, err := db.RevokeMembership(r, member, st.Admin)
				if err != nil {
					return err
				}
				if !ok {
					if err := s.notice(w, severityWarning, pgerror.Code("01000"), "role \"%s\" is not a member of role \"%s\"", member, r); err != nil {
						return err
					}
				}
				continue
			}
			added, err := db.GrantMembership(storage.Membership{Role: r, Member: member, Grantor: current, Admin: st.Admin})
			if err != nil {
				return err
			}
			if !added {
				if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "role \"%s\" is already a member of role \"%s\"", member, r); err != nil {
					return err
				}
			}
		}
	}
	if st.Revoke {
		return w.WriteComplete("REVOKE ROLE")
	}
	return w.WriteComplete("GRANT ROLE")
}

// execAlterDefaultPrivileges changes the privileges that tables (or
// sequences) the target roles create start with: for every schema, which
// replaces the built-in default, or in a schema, which adds to it.
func (s *Session) execAlterDefaultPrivileges(st *sql.AlterDefaultPrivileges, w ResultWriter) error {
	a, err := s.auth()
	if err != nil {
		return err
	}
	current := s.currentRole()
	roles := []string{current}
	if len(st.Roles) > 0 {
		roles = roles[:0]
		for _, r := range st.Roles {
			name, err := s.roleName(a, r)
			if err != nil {
				return err
			}
			if !s.trusted() && !a.IsMemberOf(current, name) {
				return pgerror.Newf(pgerror.InsufficientPrivilege, "must be member of role \"%s\"", name)
			}
			roles = append(roles, name)
		}
	}
	schemas := []string{""}
	if len(st.Schemas) > 0 {
		schemas = schemas[:0]
		for _, nsp := range st.Schemas {
			if nsp != "public" {
				return pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", nsp)
			}
			schemas = append(schemas, nsp)
		}
	}
	g := st.Action
	kind, what := storage.ObjectTable, "table"
	if g.On == sql.GrantOnSequence {
		kind, what = storage.ObjectSequence, "sequence"
	}
	privs, err := grantPrivileges(g.Privileges, kind, what)
	if err != nil {
		return err
	}
	grantees := make([]string, 0, len(g.Grantees))
	for _, r := range g.Grantees {
		name, err := s.roleName(a, r)
		if err != nil {
			return err
		}
		if name == "" && g.GrantOption && !g.Revoke {
			return pgerror.New(pgerror.InvalidGrantOperation, "grant options can only be granted to roles")
		}
		grantees = append(grantees, name)
	}
	for _, role := range roles {
		for _, nsp := range schemas {
			err := s.eng.db.UpdateDefaultPrivileges(s.aclDatabase(), role, nsp, kind, func(acl storage.ACL) (storage.ACL, error) {
				def := storage.DefaultACL(kind, role)
				if acl == nil && nsp == "" {
					acl = def
				}
				acl, err := a.Apply(kind, acl, role, storage.ACLChange{Revoke: g.Revoke, GrantOption: g.GrantOption,
					Grantees: grantees, Grantor: role, Privs: privs, Cascade: g.Cascade})
				if err != nil {
					return nil, err
				}
				if nsp == "" && sameACL(acl, def) || nsp != "" && len(acl) == 0 {
					return nil, nil // back to the built-in default
				}
				return acl, nil
			})
			if err != nil {
				return err
			}
		}
	}
	return w.WriteComplete("ALTER DEFAULT PRIVILEGES")
}

// execAlterTableOwner runs ALTER TABLE t OWNER TO r: the current role must
// own t and be a member of r, and r must be able to create in its
// schema, unless the current role is a superuser. The table's ACL then
// names the new owner where it named the old one.
func (s *Session) execAlterTableOwner(st *sql.AlterTableOwner, w ResultWriter) error {
	db := s.cat
	t, err := db.Table(st.Table)
	if err != nil {
		if st.IfExists && pgerror.GetCode(err) == pgerror.UndefinedTable {
			if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "relation \"%s\" does not exist, skipping", st.Table); err != nil {
				return err
			}
			return w.WriteComplete("ALTER TABLE")
		}
		return err
	}
	a, err := s.auth()
	if err != nil {
		return err
	}
	owner, err := s.roleName(a, st.Owner)
	if err != nil {
		return err
	}
	role := s.currentRole()
	if !s.trusted() && !a.Superuser(role) {
		if !a.HasPrivsOf(role, a.Owner(t)) {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must be owner of table %s", t.Name)
		}
		if !a.IsMemberOf(role, owner) {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must be member of role \"%s\"", owner)
		}
		if err := s.schemaPrivilege(a, owner, storage.PrivCreate); err != nil {
			return err
		}
	}
	err = db.AlterTable(t.Name, t.ID, func(d *storage.TableDesc) error {
		old := a.Owner(d)
		d.Owner = owner
		d.ACL = storage.NewOwner(d.ACL, old, owner)
		for i := range d.Columns {
			d.Columns[i].SeqACL = storage.NewOwner(d.Columns[i].SeqACL, old, owner)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.WriteComplete("ALTER TABLE")
}

// checkSetRole checks SET ROLE r: r must exist and the session user must
// be a member of it (superusers may become any role).
// setIsSuperuser sets is_superuser to whether the current role is a
// superuser, as PostgreSQL reports it after SET ROLE.
func (s *Session) setIsSuperuser(local bool) error {
	if !s.eng.AuthEnabled && s.currentRole() == s.User {
		s.setValue("is_superuser", "on", local)
		return nil
	}
	a, err := s.auth()
	if err != nil {
		return err
	}
	s.setValue("is_superuser", onOff(a.Superuser(s.currentRole())), local)
	return nil
}

func (s *Session) checkSetRole(st *sql.SetVar) error {
	if st.Reset || len(st.Args) != 1 || st.Args[0].Text == "none" {
		return nil
	}
	name := st.Args[0].Text
	a, err := s.auth()
	if err != nil {
		return err
	}
	if !a.Exists(name) {
		return pgerror.Newf(pgerror.UndefinedObject, "role \"%s\" does not exist", name)
	}
	if !a.IsMemberOf(s.User, name) {
		return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied to set role \"%s\"", name)
	}
	return nil
}

package session

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/storage"
)

// execRole runs CREATE/ALTER/DROP ROLE. Role changes are written at once
// and are not part of the surrounding transaction. Once authentication is
// on (Engine.AuthEnabled) only superusers may run them; under trust
// authentication anyone may, which is how the first role is made.
func (s *Session) execRole(st sql.Stmt, w ResultWriter) error {
	db := s.eng.db
	if !s.trusted() {
		r, err := db.Role(s.currentRole())
		if err != nil || !r.Superuser {
			what := "create role"
			switch st.(type) {
			case *sql.AlterRole:
				what = "alter role"
			case *sql.DropRole:
				what = "drop role"
			}
			return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied to %s", what)
		}
	}
	switch st := st.(type) {
	case *sql.CreateRole:
		if err := db.CreateRoleWith(storage.Role{Name: st.Name, Login: st.Login, Superuser: st.Superuser, CreateDB: st.CreateDB}, st.Password); err != nil {
			return err
		}
		if st.NoInherit {
			no := false
			if err := db.AlterRole(st.Name, storage.RoleChange{Inherit: &no}); err != nil {
				return err
			}
		}
		return w.WriteComplete("CREATE ROLE")
	case *sql.AlterRole:
		ch := storage.RoleChange{Login: st.Login, Superuser: st.Superuser, Inherit: st.Inherit, CreateDB: st.CreateDB, Password: st.Password, ClearPassword: st.ClearPassword}
		if err := db.AlterRole(st.Name, ch); err != nil {
			return err
		}
		return w.WriteComplete("ALTER ROLE")
	case *sql.DropRole:
		for _, name := range st.Names {
			if name == s.User {
				return pgerror.New(pgerror.Code("55006"), "current user cannot be dropped")
			}
		}
		for _, name := range st.Names {
			if _, err := db.DropRole(name, st.IfExists); err != nil {
				return err
			}
		}
		return w.WriteComplete("DROP ROLE")
	}
	return pgerror.AssertionFailedf("unhandled role statement %T", st)
}

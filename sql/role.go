package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// CreateRole is CREATE ROLE or CREATE USER (which implies LOGIN).
type CreateRole struct {
	Name      string
	Login     bool
	Superuser bool
	NoInherit bool
	CreateDB  bool
	// Password is nil when none is given (or PASSWORD NULL).
	Password *string
	// User is set for CREATE USER, for the command tag.
	User bool
}

// AlterRole is ALTER ROLE/USER name [WITH] option...: each non-nil field
// changes the role.
type AlterRole struct {
	Name          string
	Login         *bool
	Superuser     *bool
	Inherit       *bool
	CreateDB      *bool
	Password      *string
	ClearPassword bool
}

// DropRole is DROP ROLE/USER [IF EXISTS] name, ...
type DropRole struct {
	Names    []string
	IfExists bool
}

func (*CreateRole) stmt() {}
func (*AlterRole) stmt()  {}
func (*DropRole) stmt()   {}

// roleOptions are the options of CREATE/ALTER ROLE that deeplaked knows.
type roleOptions struct {
	login, superuser, inherit, createdb *bool
	password                            *string
	clearPassword                       bool
}

func convertRoleOptions(opts []*pg.Node) (roleOptions, error) {
	var ro roleOptions
	seen := map[string]bool{}
	for _, n := range opts {
		d := n.GetDefElem()
		if d == nil {
			return ro, unsupported("this role option")
		}
		if seen[d.Defname] {
			return ro, pgerror.New(pgerror.SyntaxError, "conflicting or redundant options")
		}
		seen[d.Defname] = true
		switch d.Defname {
		case "canlogin", "superuser", "inherit", "createdb":
			b, ok := d.Arg.GetNode().(*pg.Node_Boolean)
			if !ok {
				return ro, pgerror.Newf(pgerror.SyntaxError, "invalid value for %s", d.Defname)
			}
			v := b.Boolean.Boolval
			switch d.Defname {
			case "canlogin":
				ro.login = &v
			case "superuser":
				ro.superuser = &v
			case "inherit":
				ro.inherit = &v
			default:
				ro.createdb = &v
			}
		case "password":
			if d.Arg == nil {
				ro.clearPassword = true
				continue
			}
			s, ok := d.Arg.GetNode().(*pg.Node_String_)
			if !ok {
				return ro, pgerror.New(pgerror.SyntaxError, "invalid value for PASSWORD")
			}
			pw := s.String_.Sval
			ro.password = &pw
		default:
			return ro, unsupported("role option " + d.Defname)
		}
	}
	return ro, nil
}

func convertCreateRole(s *pg.CreateRoleStmt) (Stmt, error) {
	if s.StmtType == pg.RoleStmtType_ROLESTMT_GROUP {
		return nil, unsupported("CREATE GROUP")
	}
	ro, err := convertRoleOptions(s.Options)
	if err != nil {
		return nil, err
	}
	cr := &CreateRole{Name: s.Role, User: s.StmtType == pg.RoleStmtType_ROLESTMT_USER, Password: ro.password}
	cr.Login = cr.User
	if ro.login != nil {
		cr.Login = *ro.login
	}
	if ro.superuser != nil {
		cr.Superuser = *ro.superuser
	}
	cr.NoInherit = ro.inherit != nil && !*ro.inherit
	if ro.createdb != nil {
		cr.CreateDB = *ro.createdb
	}
	return cr, nil
}

func roleSpecName(rs *pg.RoleSpec) (string, error) {
	if rs == nil || rs.Roletype != pg.RoleSpecType_ROLESPEC_CSTRING {
		return "", unsupported("CURRENT_USER, CURRENT_ROLE, SESSION_USER and PUBLIC as a role name")
	}
	return rs.Rolename, nil
}

func convertAlterRole(s *pg.AlterRoleStmt) (Stmt, error) {
	name, err := roleSpecName(s.Role)
	if err != nil {
		return nil, err
	}
	ro, err := convertRoleOptions(s.Options)
	if err != nil {
		return nil, err
	}
	return &AlterRole{Name: name, Login: ro.login, Superuser: ro.superuser, Inherit: ro.inherit, CreateDB: ro.createdb, Password: ro.password, ClearPassword: ro.clearPassword}, nil
}

func convertDropRole(s *pg.DropRoleStmt) (Stmt, error) {
	dr := &DropRole{IfExists: s.MissingOk}
	for _, n := range s.Roles {
		name, err := roleSpecName(n.GetRoleSpec())
		if err != nil {
			return nil, err
		}
		dr.Names = append(dr.Names, name)
	}
	return dr, nil
}

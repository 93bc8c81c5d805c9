package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// RoleRefKind says what a role specification names.
type RoleRefKind uint8

// Role specifications.
const (
	RoleNamed RoleRefKind = iota + 1
	RolePublic
	RoleCurrentUser // CURRENT_USER, CURRENT_ROLE
	RoleSessionUser
)

// RoleRef is a role as a statement names it: a name, PUBLIC, CURRENT_USER
// or SESSION_USER.
type RoleRef struct {
	Kind RoleRefKind
	Name string
}

// GrantObject is the kind of object a GRANT or REVOKE is about.
type GrantObject uint8

// Objects of GRANT and REVOKE.
const (
	GrantOnTable GrantObject = iota + 1
	GrantOnSequence
	GrantOnSchema
	GrantOnDatabase
)

// Grant is GRANT or REVOKE of privileges on objects: tables (also ON ALL
// TABLES IN SCHEMA), sequences, schemas or databases.
type Grant struct {
	Revoke bool
	On     GrantObject
	// Objects are the named objects; with AllInSchema, the schemas whose
	// every table (or sequence) is meant.
	Objects     []string
	AllInSchema bool
	// Privileges are the privilege names, upper case; nil for ALL
	// [PRIVILEGES].
	Privileges []string
	Grantees   []RoleRef
	// GrantOption is WITH GRANT OPTION, or on REVOKE, GRANT OPTION FOR.
	GrantOption bool
	GrantedBy   *RoleRef
	Cascade     bool
}

// GrantRole is GRANT role, ... TO role, ... [WITH ADMIN OPTION] or REVOKE
// [ADMIN OPTION FOR] role, ... FROM role, ...
type GrantRole struct {
	Revoke    bool
	Roles     []string
	Grantees  []RoleRef
	Admin     bool // WITH ADMIN OPTION; ADMIN OPTION FOR on REVOKE
	GrantedBy *RoleRef
	Cascade   bool
}

// AlterDefaultPrivileges is ALTER DEFAULT PRIVILEGES [FOR ROLE r, ...]
// [IN SCHEMA s, ...] GRANT/REVOKE ... ON TABLES/SEQUENCES.
type AlterDefaultPrivileges struct {
	Roles   []RoleRef
	Schemas []string
	Action  *Grant
}

// AlterTableOwner is ALTER TABLE [IF EXISTS] name OWNER TO role, the one
// form of ALTER TABLE deeplaked takes.
type AlterTableOwner struct {
	Table    string
	IfExists bool
	Owner    RoleRef
}

func (*Grant) stmt()                  {}
func (*GrantRole) stmt()              {}
func (*AlterDefaultPrivileges) stmt() {}
func (*AlterTableOwner) stmt()        {}

// roleRef converts a role specification.
func roleRef(rs *pg.RoleSpec) (RoleRef, error) {
	if rs == nil {
		return RoleRef{}, pgerror.New(pgerror.SyntaxError, "missing role name")
	}
	switch rs.Roletype {
	case pg.RoleSpecType_ROLESPEC_CSTRING:
		return RoleRef{Kind: RoleNamed, Name: rs.Rolename}, nil
	case pg.RoleSpecType_ROLESPEC_PUBLIC:
		return RoleRef{Kind: RolePublic}, nil
	case pg.RoleSpecType_ROLESPEC_CURRENT_USER, pg.RoleSpecType_ROLESPEC_CURRENT_ROLE:
		return RoleRef{Kind: RoleCurrentUser}, nil
	case pg.RoleSpecType_ROLESPEC_SESSION_USER:
		return RoleRef{Kind: RoleSessionUser}, nil
	}
	return RoleRef{}, unsupported("this role specification")
}

func roleRefs(ns []*pg.Node) ([]RoleRef, error) {
	out := make([]RoleRef, 0, len(ns))
	for _, n := range ns {
		r, err := roleRef(n.GetRoleSpec())
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func convertGrant(s *pg.GrantStmt) (*Grant, error) {
	g := &Grant{Revoke: !s.IsGrant, GrantOption: s.GrantOption, Cascade: s.Behavior == pg.DropBehavior_DROP_CASCADE}
	switch s.Objtype {
	case pg.ObjectType_OBJECT_TABLE:
		g.On = GrantOnTable
	case pg.ObjectType_OBJECT_SEQUENCE:
		g.On = GrantOnSequence
	case pg.ObjectType_OBJECT_SCHEMA:
		g.On = GrantOnSchema
	case pg.ObjectType_OBJECT_DATABASE:
		g.On = GrantOnDatabase
	default:
		return nil, unsupported("GRANT on " + strings.ToLower(strings.TrimPrefix(s.Objtype.String(), "OBJECT_")))
	}
	switch s.Targtype {
	case pg.GrantTargetType_ACL_TARGET_OBJECT:
		for _, n := range s.Objects {
			switch {
			case n.GetRangeVar() != nil:
				rv := n.GetRangeVar()
				if rv.Schemaname != "" && rv.Schemaname != "public" {
					return nil, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s.%s\" does not exist", rv.Schemaname, rv.Relname)
				}
				g.Objects = append(g.Objects, rv.Relname)
			case n.GetString_() != nil:
				g.Objects = append(g.Objects, n.GetString_().Sval)
			default:
				return nil, unsupported("this GRANT object")
			}
		}
	case pg.GrantTargetType_ACL_TARGET_ALL_IN_SCHEMA:
		g.AllInSchema = true
		for _, n := range s.Objects {
			g.Objects = append(g.Objects, n.GetString_().GetSval())
		}
	case pg.GrantTargetType_ACL_TARGET_DEFAULTS:
	default:
		return nil, unsupported("this form of GRANT")
	}
	for _, n := range s.Privileges {
		ap := n.GetAccessPriv()
		if ap == nil {
			return nil, unsupported("this privilege")
		}
		if len(ap.Cols) > 0 {
			return nil, unsupported("column privileges")
		}
		if ap.PrivName == "" { // ALL (col, ...)
			g.Privileges = nil
			break
		}
		g.Privileges = append(g.Privileges, strings.ToUpper(ap.PrivName))
	}
	var err error
	if g.Grantees, err = roleRefs(s.Grantees); err != nil {
		return nil, err
	}
	if s.Grantor != nil {
		r, err := roleRef(s.Grantor)
		if err != nil {
			return nil, err
		}
		g.GrantedBy = &r
	}
	return g, nil
}

func convertGrantRole(s *pg.GrantRoleStmt) (Stmt, error) {
	g := &GrantRole{Revoke: !s.IsGrant, Cascade: s.Behavior == pg.DropBehavior_DROP_CASCADE}
	for _, n := range s.GrantedRoles {
		ap := n.GetAccessPriv()
		if ap == nil {
			return nil, unsupported("this role")
		}
		g.Roles = append(g.Roles, ap.PrivName)
	}
	var err error
	if g.Grantees, err = roleRefs(s.GranteeRoles); err != nil {
		return nil, err
	}
	for _, n := range s.Opt {
		d := n.GetDefElem()
		if d == nil || d.Defname != "admin" {
			return nil, unsupported("this option of GRANT role")
		}
		// GRANT ... WITH ADMIN OPTION is admin true; REVOKE ADMIN OPTION
		// FOR is admin false.
		g.Admin = true
	}
	if s.Grantor != nil {
		r, err := roleRef(s.Grantor)
		if err != nil {
			return nil, err
		}
		g.GrantedBy = &r
	}
	return g, nil
}

func convertAlterDefaultPrivileges(s *pg.AlterDefaultPrivilegesStmt) (Stmt, error) {
	a := &AlterDefaultPrivileges{}
	for _, n := range s.Options {
		d := n.GetDefElem()
		if d == nil {
			return nil, unsupported("this option of ALTER DEFAULT PRIVILEGES")
		}
		items := d.Arg.GetList().GetItems()
		switch d.Defname {
		case "roles":
			rs, err := roleRefs(items)
			if err != nil {
				return nil, err
			}
			a.Roles = rs
		case "schemas":
			for _, it := range items {
				a.Schemas = append(a.Schemas, it.GetString_().GetSval())
			}
		default:
			return nil, unsupported("ALTER DEFAULT PRIVILEGES option " + d.Defname)
		}
	}
	g, err := convertGrant(s.Action)
	if err != nil {
		return nil, err
	}
	if g.On != GrantOnTable && g.On != GrantOnSequence {
		return nil, unsupported("ALTER DEFAULT PRIVILEGES other than ON TABLES and ON SEQUENCES")
	}
	a.Action = g
	return a, nil
}

func convertAlterTable(s *pg.AlterTableStmt) (Stmt, error) {
	if s.Objtype != pg.ObjectType_OBJECT_TABLE || len(s.Cmds) != 1 {
		return nil, unsupported("ALTER TABLE other than OWNER TO")
	}
	cmd := s.Cmds[0].GetAlterTableCmd()
	if cmd == nil || cmd.Subtype != pg.AlterTableType_AT_ChangeOwner {
		return nil, unsupported("ALTER TABLE other than OWNER TO")
	}
	name, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	owner, err := roleRef(cmd.Newowner)
	if err != nil {
		return nil, err
	}
	if owner.Kind == RolePublic {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"PUBLIC\"")
	}
	return &AlterTableOwner{Table: name, IfExists: s.MissingOk, Owner: owner}, nil
}

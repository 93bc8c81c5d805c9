package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// CreateDatabase is CREATE DATABASE name [[WITH] OWNER role ...].
type CreateDatabase struct {
	Name string
	// Owner is the owning role; "" means the role running the statement.
	Owner string
}

// DropDatabase is DROP DATABASE [IF EXISTS] name [[WITH] (FORCE)].
type DropDatabase struct {
	Name     string
	IfExists bool
	// Force ends the other sessions connected to the database first.
	Force bool
}

// AlterDatabase is ALTER DATABASE name RENAME TO new or OWNER TO role:
// one of RenameTo and Owner is set.
type AlterDatabase struct {
	Name     string
	RenameTo string
	Owner    string
}

func (*CreateDatabase) stmt() {}
func (*DropDatabase) stmt()   {}
func (*AlterDatabase) stmt()  {}

// convertDatabaseStmt converts the statements on databases: CREATE, DROP
// and ALTER DATABASE (RENAME TO, OWNER TO). RENAME and OWNER TO of other
// objects are not supported.
func convertDatabaseStmt(n *pg.Node, text string) (Stmt, error) {
	switch s := n.Node.(type) {
	case *pg.Node_CreatedbStmt:
		return convertCreateDatabase(s.CreatedbStmt)
	case *pg.Node_DropdbStmt:
		dd := &DropDatabase{Name: s.DropdbStmt.Dbname, IfExists: s.DropdbStmt.MissingOk}
		for _, o := range s.DropdbStmt.Options {
			d := o.GetDefElem()
			if d == nil || d.Defname != "force" {
				return nil, pgerror.Newf(pgerror.SyntaxError, "unrecognized DROP DATABASE option \"%s\"", defName(d))
			}
			dd.Force = true
		}
		return dd, nil
	case *pg.Node_RenameStmt:
		if s.RenameStmt.RenameType == pg.ObjectType_OBJECT_DATABASE {
			return &AlterDatabase{Name: s.RenameStmt.Subname, RenameTo: s.RenameStmt.Newname}, nil
		}
	case *pg.Node_AlterOwnerStmt:
		if s.AlterOwnerStmt.ObjectType == pg.ObjectType_OBJECT_DATABASE {
			owner, err := roleSpecName(s.AlterOwnerStmt.Newowner)
			if err != nil {
				return nil, err
			}
			return &AlterDatabase{Name: constText(s.AlterOwnerStmt.Object), Owner: owner}, nil
		}
	}
	return nil, unsupported(stmtKind(text))
}

func defName(d *pg.DefElem) string {
	if d == nil {
		return ""
	}
	return d.Defname
}

// convertCreateDatabase reads CREATE DATABASE's options: OWNER, and the
// ones that say what every deeplaked database is (TEMPLATE template0 or
// template1, ENCODING UTF8, locale C); others are not supported.
func convertCreateDatabase(s *pg.CreatedbStmt) (Stmt, error) {
	cd := &CreateDatabase{Name: s.Dbname}
	seen := map[string]bool{}
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			return nil, unsupported("this CREATE DATABASE option")
		}
		if seen[d.Defname] {
			return nil, pgerror.New(pgerror.SyntaxError, "conflicting or redundant options")
		}
		seen[d.Defname] = true
		val := ""
		if d.Arg != nil {
			val = constText(d.Arg)
		}
		switch d.Defname {
		case "owner":
			cd.Owner = val // DEFAULT (no value) is the current role
		case "template":
			if d.Arg != nil && val != "template0" && val != "template1" {
				return nil, pgerror.Newf(pgerror.InvalidCatalogName, "template database \"%s\" does not exist", val)
			}
		case "encoding":
			if d.Arg != nil && !strings.EqualFold(strings.ReplaceAll(val, "-", ""), "UTF8") && val != "6" {
				return nil, pgerror.Newf(pgerror.FeatureNotSupported, "encoding \"%s\" is not supported: every database is UTF8", val)
			}
		case "locale", "lc_collate", "lc_ctype":
			if d.Arg != nil && val != "C" && val != "POSIX" {
				return nil, pgerror.Newf(pgerror.FeatureNotSupported, "locale \"%s\" is not supported: every database uses the C locale", val)
			}
		case "locale_provider":
			if d.Arg != nil && !strings.EqualFold(val, "libc") {
				return nil, pgerror.Newf(pgerror.FeatureNotSupported, "locale provider \"%s\" is not supported", val)
			}
		default:
			return nil, unsupported("CREATE DATABASE option " + strings.ToUpper(d.Defname))
		}
	}
	return cd, nil
}

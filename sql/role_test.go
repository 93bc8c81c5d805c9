package sql

import (
	"reflect"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestParseRoleStatements(t *testing.T) {
	pw := func(s string) *string { return &s }
	yes, no := true, false
	for _, c := range []struct {
		sql  string
		want Stmt
	}{
		{"CREATE ROLE a", &CreateRole{Name: "a"}},
		{"CREATE ROLE a WITH LOGIN SUPERUSER PASSWORD 'p w'", &CreateRole{Name: "a", Login: true, Superuser: true, Password: pw("p w")}},
		{"CREATE USER \"B\" PASSWORD 'x'", &CreateRole{Name: "B", Login: true, Password: pw("x"), User: true}},
		{"CREATE USER c NOLOGIN", &CreateRole{Name: "c", User: true}},
		{"CREATE ROLE d PASSWORD NULL", &CreateRole{Name: "d"}},
		{"ALTER ROLE a WITH PASSWORD 'n'", &AlterRole{Name: "a", Password: pw("n")}},
		{"ALTER ROLE a PASSWORD NULL", &AlterRole{Name: "a", ClearPassword: true}},
		{"ALTER USER a NOLOGIN NOSUPERUSER", &AlterRole{Name: "a", Login: &no, Superuser: &no}},
		{"ALTER ROLE a LOGIN", &AlterRole{Name: "a", Login: &yes}},
		{"CREATE ROLE e CREATEDB", &CreateRole{Name: "e", CreateDB: true}},
		{"ALTER ROLE e NOCREATEDB", &AlterRole{Name: "e", CreateDB: &no}},
		{"DROP ROLE a", &DropRole{Names: []string{"a"}}},
		{"DROP USER IF EXISTS a, b", &DropRole{Names: []string{"a", "b"}, IfExists: true}},
	} {
		ps, err := Parse(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if len(ps) != 1 || !reflect.DeepEqual(ps[0].Stmt, c.want) {
			t.Errorf("%s = %#v, want %#v", c.sql, ps[0].Stmt, c.want)
		}
	}
	for _, c := range []struct {
		sql  string
		code pgerror.Code
	}{
		{"CREATE ROLE a REPLICATION", pgerror.FeatureNotSupported},
		{"CREATE GROUP g", pgerror.FeatureNotSupported},
		{"ALTER ROLE CURRENT_USER PASSWORD 'x'", pgerror.FeatureNotSupported},
		{"CREATE ROLE a LOGIN NOLOGIN", pgerror.SyntaxError},
	} {
		_, err := Parse(c.sql)
		if got := pgerror.GetCode(err); got != c.code {
			t.Errorf("%s: got %v (%v), want %s", c.sql, got, err, c.code)
		}
	}
}

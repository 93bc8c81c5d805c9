package sql

import (
	"reflect"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestParseDatabaseStatements(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want Stmt
	}{
		{"CREATE DATABASE d", &CreateDatabase{Name: "d"}},
		{"CREATE DATABASE \"D\" WITH OWNER = bob", &CreateDatabase{Name: "D", Owner: "bob"}},
		{"CREATE DATABASE d OWNER DEFAULT TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'", &CreateDatabase{Name: "d"}},
		{"DROP DATABASE d", &DropDatabase{Name: "d"}},
		{"DROP DATABASE IF EXISTS d WITH (FORCE)", &DropDatabase{Name: "d", IfExists: true, Force: true}},
		{"DROP DATABASE d (FORCE)", &DropDatabase{Name: "d", Force: true}},
		{"ALTER DATABASE d RENAME TO e", &AlterDatabase{Name: "d", RenameTo: "e"}},
		{"ALTER DATABASE d OWNER TO bob", &AlterDatabase{Name: "d", Owner: "bob"}},
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
		{"CREATE DATABASE d ENCODING 'LATIN1'", pgerror.FeatureNotSupported},
		{"CREATE DATABASE d TEMPLATE other", pgerror.InvalidCatalogName},
		{"CREATE DATABASE d CONNECTION LIMIT 3", pgerror.FeatureNotSupported},
		{"CREATE DATABASE d OWNER a OWNER b", pgerror.SyntaxError},
		{"ALTER DATABASE d WITH CONNECTION LIMIT 3", pgerror.FeatureNotSupported},
		{"ALTER TABLE t RENAME TO u", pgerror.FeatureNotSupported},
		{"ALTER SCHEMA s OWNER TO bob", pgerror.FeatureNotSupported},
	} {
		_, err := Parse(c.sql)
		if got := pgerror.GetCode(err); got != c.code {
			t.Errorf("%s: got %v (%v), want %s", c.sql, got, err, c.code)
		}
	}
}

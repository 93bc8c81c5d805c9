package sql

import "github.com/deeplaked/deeplaked/plan"

// systemTable returns the system table schema.name names, or nil. An
// unqualified name finds pg_catalog's tables first, as PostgreSQL's
// search_path (which always starts with pg_catalog) does.
func systemTable(schema, name string) *plan.SysTable {
	switch schema {
	case "":
		return plan.LookupSysTable("pg_catalog", name)
	case "pg_catalog", "information_schema":
		return plan.LookupSysTable(schema, name)
	}
	return nil
}

func isSystemSchema(s string) bool { return s == "pg_catalog" || s == "information_schema" }

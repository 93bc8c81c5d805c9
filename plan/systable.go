package plan

import "github.com/deeplaked/deeplaked/types"

// SysTable is a table of pg_catalog or information_schema. It holds no
// rows: exec generates them from the catalog when a scan starts.
type SysTable struct {
	Schema string
	Name   string
	// OID is the table's PostgreSQL OID (pg_class.oid).
	OID  uint32
	Cols []SysColumn
}

// SysColumn is one column of a SysTable.
type SysColumn struct {
	Name string
	Type types.Type
}

// SysTables lists every system table.
var SysTables []*SysTable

// LookupSysTable returns the system table schema.name, or nil.
func LookupSysTable(schema, name string) *SysTable {
	for _, t := range SysTables {
		if t.Schema == schema && t.Name == name {
			return t
		}
	}
	return nil
}

package exec

import (
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// sysTableRows generates the rows of each system table, by schema.name.
// Tables without an entry exist and are empty: deeplaked has no policies,
// inheritance, triggers, publications, rules, extensions...
var sysTableRows = map[string]func(env *Env, c *sysCatalog, r *sysRows){
	"pg_catalog.pg_namespace": func(env *Env, c *sysCatalog, r *sysRows) {
		p, err := env.privileges()
		for _, n := range namespaces {
			owner := bootstrapRoleOID
			if n.oid == plan.NamespacePublic {
				owner = databaseOwnerOID // as in PostgreSQL 15
			}
			var acl any
			if err == nil {
				acl = namespaceACL(p, n.oid)
			}
			r.row(n.oid, n.name, owner, acl)
		}
	},
	"pg_catalog.pg_class": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, rel := range c.relations() {
			persistence := "p"
			owner := bootstrapRoleOID
			if rel.table != nil {
				owner = c.ownerOID(rel.table)
			}
			r.row(rel.oid, rel.name, rel.nsp, uint32(0), uint32(0), owner, rel.am, rel.oid, uint32(0),
				0, float64(-1), 0, uint32(0), rel.hasIndex, false, persistence, string(rel.kind), rel.natts, 0,
				false, false, false, false, false, true, "d", false, uint32(0), relACL(rel), nil, nil)
		}
	},
	"pg_catalog.pg_attribute": func(env *Env, c *sysCatalog, r *sysRows) {
		attr := func(rel uint32, name string, t types.Type, num int, notNull, hasDef bool) {
			oid, typmod, length, ndims := columnType(t)
			coll := uint32(0)
			if tt, ok := typeByOID(oid); ok {
				coll = tt.coll
			}
			storage := "p"
			if length < 0 {
				storage = "x"
			}
			r.row(rel, name, oid, -1, length, num, ndims, -1, typmod, length > 0 && length <= 8, typeAlign(length), storage,
				"", notNull, hasDef, false, "", "", false, true, 0, coll, nil, nil, nil, nil)
		}
		for _, st := range plan.SysTables {
			for i, col := range st.Cols {
				attr(st.OID, col.Name, col.Type, i+1, false, false)
			}
		}
		for _, t := range c.tables {
			for i, col := range t.Columns {
				attr(TableOID(t.ID), col.Name, col.Type, i+1, col.NotNull, columnDefault(t, i) != "")
			}
			for k, i := range t.PrimaryKey {
				attr(indexOID(t.ID), t.Columns[i].Name, t.Columns[i].Type, k+1, false, false)
			}
			for _, ix := range t.Indexes {
				attr(indexOID(ix.ID), t.Columns[ix.Column].Name, t.Columns[ix.Column].Type, 1, false, false)
			}
		}
	},
	"pg_catalog.pg_type": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range allTypes() {
			typtype := "b"
			if t.typtype != 0 {
				typtype = string(t.typtype)
			}
			elem := typeElem(t.oid)
			input := uint32(0)
			if t.category == 'A' && elem != 0 {
				input = arrayInOID
			}
			byval := t.len > 0 && t.len <= 8
			storage := "p"
			if t.len < 0 {
				storage = "x"
			}
			r.row(t.oid, t.name, plan.NamespaceCatalog, bootstrapRoleOID, t.len, byval, typtype, string(t.category), t.pref, true,
				",", uint32(0), uint32(0), elem, t.array, input, uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0),
				typeAlign(t.len), storage, false, uint32(0), -1, 0, t.coll, nil, nil, nil)
		}
	},
	"pg_catalog.pg_index": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			if len(t.PrimaryKey) == 0 {
				continue
			}
			keys := make([]string, len(t.PrimaryKey))
			for i, k := range t.PrimaryKey {
				keys[i] = strconv.Itoa(k + 1)
			}
			n := len(t.PrimaryKey)
			r.row(indexOID(t.ID), TableOID(t.ID), n, n, true, false, true, false, true, false, true, false, true, true, false,
				"{"+strings.Join(keys, ",")+"}", nil, nil, "{"+strings.TrimSuffix(strings.Repeat("0,", n), ",")+"}", nil, nil)
		}
		for _, t := range c.tables {
			for _, ix := range t.Indexes {
				r.row(indexOID(ix.ID), TableOID(t.ID), 1, 1, false, false, false, false, true, false, true, false, true, true, false,
					"{"+strconv.Itoa(ix.Column+1)+"}", nil, nil, "{0}", nil, nil)
			}
		}
	},
	"pg_catalog.pg_constraint": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			if len(t.PrimaryKey) == 0 {
				continue
			}
			keys := make([]string, len(t.PrimaryKey))
			for i, k := range t.PrimaryKey {
				keys[i] = strconv.Itoa(k + 1)
			}
			r.row(constraintOID(t.ID), pkeyName(t), plan.NamespacePublic, "p", false, false, true, TableOID(t.ID), uint32(0),
				indexOID(t.ID), uint32(0), uint32(0), " ", " ", " ", true, 0, true, "{"+strings.Join(keys, ",")+"}",
				nil, nil, nil, nil, nil, nil, nil)
		}
	},
	"pg_catalog.pg_depend": func(env *Env, c *sysCatalog, r *sysRows) {
		// A serial column's sequence is owned by the column (deptype a).
		for _, t := range c.tables {
			for i, col := range t.Columns {
				if col.Serial {
					r.row(pgClassOID, sequenceOID(t.ID, i), 0, pgClassOID, TableOID(t.ID), i+1, "a")
				}
			}
		}
	},
	"pg_catalog.pg_sequence": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			for i, col := range t.Columns {
				if col.Serial {
					maxv := int64(1<<63 - 1)
					switch col.Type.Kind {
					case types.Int2:
						maxv = 1<<15 - 1
					case types.Int4:
						maxv = 1<<31 - 1
					}
					r.row(sequenceOID(t.ID, i), col.Type.OID(), int64(1), int64(1), maxv, int64(1), int64(1), false)
				}
			}
		}
	},
	"pg_catalog.pg_sequences": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			owner := c.ownerOf(t)
			for i, col := range t.Columns {
				if col.Serial {
					maxv := int64(1<<63 - 1)
					switch col.Type.Kind {
					case types.Int2:
						maxv = 1<<15 - 1
					case types.Int4:
						maxv = 1<<31 - 1
					}
					r.row("public", sequenceName(t, i), owner, col.Type.OID(), int64(1), int64(1), maxv, int64(1), false, int64(1), nil)
				}
			}
		}
	},
	"pg_catalog.pg_database": func(env *Env, c *sysCatalog, r *sysRows) {
		if env.DB == nil {
			r.row(databaseOID, env.databaseName(), bootstrapRoleOID, utf8Encoding, "c", false, true, -1, int64(0), int64(1), uint32(1663),
				"C", "C", nil, nil, nil)
			return
		}
		// Every database: UTF8, the C locale, no connection limit, no
		// ACL (the default privileges).
		for _, d := range c.databases {
			r.row(d.OID, d.Name, c.roleOIDByName(d.Owner), utf8Encoding, "c", false, true, -1, int64(0), int64(1), uint32(1663),
				"C", "C", nil, nil, nil)
		}
	},
	"pg_catalog.pg_roles": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, role := range c.roles {
			r.row(role.name, role.super, !role.noInherit, role.super, role.createDB, role.login, role.super, -1, "********", nil, role.super, nil, role.oid)
		}
	},
	"pg_catalog.pg_user": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, role := range c.roles {
			if role.login {
				r.row(role.name, role.oid, role.createDB, role.super, role.super, role.super, "********", nil, nil)
			}
		}
	},
	"pg_catalog.pg_settings": func(env *Env, c *sysCatalog, r *sysRows) {
		if env.Settings == nil {
			return
		}
		for _, p := range env.Settings() {
			source := "session"
			if p.Value == p.Default {
				source = "default"
			}
			r.row(p.Name, p.Value, nil, "", p.Desc, nil, p.Context, "string", source, nil, nil, nil, p.Default, p.Default, nil, nil, false)
		}
	},
	"pg_catalog.pg_language": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, l := range []struct {
			oid  uint32
			name string
		}{{12, "internal"}, {13, "c"}, {14, "sql"}} {
			r.row(l.oid, l.name, bootstrapRoleOID, false, l.name == "sql", uint32(0), uint32(0), uint32(0), nil)
		}
	},
	"pg_catalog.pg_am": func(env *Env, c *sysCatalog, r *sysRows) {
		r.row(heapAMOID, "heap", uint32(0), "t")
		r.row(btreeAMOID, "btree", uint32(0), "i")
		r.row(hnswAMOID, "hnsw", uint32(0), "i")
		r.row(ivfflatAMOID, "ivfflat", uint32(0), "i")
	},
	"pg_catalog.pg_extension": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, e := range plan.Extensions {
			r.row(e.OID, e.Name, bootstrapRoleOID, plan.NamespacePublic, true, e.Version, nil, nil)
		}
	},
	"pg_catalog.pg_attrdef": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			for i := range t.Columns {
				if d := columnDefault(t, i); d != "" {
					r.row(attrdefOID(t.ID, i), TableOID(t.ID), i+1, d)
				}
			}
		}
	},
	"pg_catalog.pg_collation": func(env *Env, c *sysCatalog, r *sysRows) {
		r.row(defaultCollOID, "default", plan.NamespaceCatalog, bootstrapRoleOID, "d", true, -1, nil, nil, nil, nil)
		r.row(cCollOID, "C", plan.NamespaceCatalog, bootstrapRoleOID, "c", true, -1, "C", "C", nil, nil)
		r.row(uint32(951), "POSIX", plan.NamespaceCatalog, bootstrapRoleOID, "c", true, -1, "POSIX", "POSIX", nil, nil)
	},
	"pg_catalog.pg_tablespace": func(env *Env, c *sysCatalog, r *sysRows) {
		r.row(uint32(1663), "pg_default", bootstrapRoleOID, nil, nil)
		r.row(uint32(1664), "pg_global", bootstrapRoleOID, nil, nil)
	},
	"pg_catalog.pg_proc": func(env *Env, c *sysCatalog, r *sysRows) {
		for i, f := range procNames {
			r.row(uint32(90000+i), f, plan.NamespaceCatalog, bootstrapRoleOID, uint32(12), float64(1), float64(0), uint32(0), uint32(0),
				"f", false, false, true, false, "s", "s", 0, 0, uint32(25), "", nil, nil, nil, nil, nil, f, nil, nil, nil, nil)
		}
	},
	"pg_catalog.pg_tables": func(env *Env, c *sysCatalog, r *sysRows) {
		boot, _ := c.roleName(bootstrapRoleOID)
		for _, rel := range c.relations() {
			if rel.kind != 'r' {
				continue
			}
			owner := boot
			if rel.table != nil {
				owner = c.ownerOf(rel.table)
			}
			nsp, _ := namespaceName(rel.nsp)
			r.row(nsp, rel.name, owner, nil, rel.hasIndex, false, false, false)
		}
	},
	"pg_catalog.pg_views": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			if t.View != "" {
				r.row("public", t.Name, c.ownerOf(t), " "+t.View+";")
			}
		}
	},
	"pg_catalog.pg_indexes": func(env *Env, c *sysCatalog, r *sysRows) {
		for _, t := range c.tables {
			if len(t.PrimaryKey) > 0 {
				r.row("public", t.Name, pkeyName(t), nil, indexDef(t, nil, 0, false))
			}
			for i := range t.Indexes {
				r.row("public", t.Name, t.Indexes[i].Name, nil, indexDef(t, &t.Indexes[i], 0, false))
			}
		}
	},
	"pg_catalog.pg_auth_members": authMembers,
	"information_schema.table_privileges": func(env *Env, c *sysCatalog, r *sysRows) {
		tableGrants(env, c, r, false)
	},
	"information_schema.role_table_grants": func(env *Env, c *sysCatalog, r *sysRows) {
		tableGrants(env, c, r, true)
	},
	"information_schema.schemata": func(env *Env, c *sysCatalog, r *sysRows) {
		owner, _ := c.roleName(bootstrapRoleOID)
		for _, n := range namespaces {
			r.row(env.databaseName(), n.name, owner, nil, nil, nil, nil)
		}
	},
	"information_schema.tables": func(env *Env, c *sysCatalog, r *sysRows) {
		p, err := env.privileges()
		for _, rel := range c.relations() {
			if rel.kind != 'r' && rel.kind != 'v' {
				continue
			}
			if rel.table != nil && (err != nil || !p.visibleTable(rel.table)) {
				continue // only tables the role has some privilege on
			}
			nsp, _ := namespaceName(rel.nsp)
			typ, ins := "BASE TABLE", "YES"
			if rel.kind == 'v' {
				typ, ins = "VIEW", "NO"
			}
			r.row(env.databaseName(), nsp, rel.name, typ, nil, nil, nil, nil, nil, ins, "NO", nil)
		}
	},
	"information_schema.columns": func(env *Env, c *sysCatalog, r *sysRows) {
		p, err := env.privileges()
		for _, t := range c.tables {
			if err != nil || !p.visibleTable(t) {
				continue
			}
			for i, col := range t.Columns {
				oid, typmod, _, _ := columnType(col.Type)
				tt, _ := typeByOID(oid)
				dataType := tt.sqlName
				if tt.category == 'A' {
					dataType = "ARRAY"
				}
				if col.Type.IsVector() {
					dataType = "USER-DEFINED"
				}
				var maxLen, octets, prec, radix, scale any
				switch col.Type.Kind {
				case types.Varchar:
					if typmod >= 4 {
						maxLen, octets = int(typmod-4), int(typmod-4)*4
					} else {
						octets = 1073741824
					}
				case types.Text:
					octets = 1073741824
				case types.Int2:
					prec, radix, scale = 16, 2, 0
				case types.Int4:
					prec, radix, scale = 32, 2, 0
				case types.Int8:
					prec, radix, scale = 64, 2, 0
				case types.Float4:
					prec, radix = 24, 2
				case types.Float8:
					prec, radix = 53, 2
				case types.Numeric:
					radix = 10
					if col.Type.Width > 0 {
						prec, scale = col.Type.Width, col.Type.Scale
					}
				}
				nullable := "YES"
				if col.NotNull {
					nullable = "NO"
				}
				var def any
				if d := columnDefault(t, i); d != "" {
					def = d
				}
				r.row(env.databaseName(), "public", t.Name, col.Name, i+1, def, nullable, dataType, maxLen, octets, prec, radix, scale,
					nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, env.databaseName(), "pg_catalog", tt.name,
					nil, nil, nil, nil, strconv.Itoa(i+1), "NO", "NO", nil, nil, nil, nil, nil, "NO", "NEVER", nil, "YES")
			}
		}
	},
}

func (e *Env) databaseName() string {
	if e.Database == "" {
		return "postgres"
	}
	return e.Database
}

// procNames are the functions pg_proc lists: the catalog and session
// functions deeplaked implements.
var procNames = []string{
	"array_to_string", "col_description", "current_database", "current_schema", "current_schemas",
	"current_setting", "current_user", "format_type", "has_database_privilege", "has_schema_privilege",
	"has_table_privilege", "has_any_column_privilege", "has_column_privilege", "pg_has_role", "obj_description", "pg_encoding_to_char", "pg_get_constraintdef", "pg_get_expr",
	"pg_get_indexdef", "pg_get_userbyid", "pg_table_is_visible", "session_user", "to_regclass",
	"to_regnamespace", "to_regtype", "version",
}

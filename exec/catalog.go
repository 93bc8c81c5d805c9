package exec

import (
	"sort"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// OIDs deeplaked gives its objects. Tables keep 16384+id (what clients see
// in RowDescription); a table's primary key index, its constraint and its
// column defaults get OIDs in ranges of their own.
const (
	bootstrapRoleOID uint32 = 10
	databaseOwnerOID uint32 = 6171 // pg_database_owner, the owner of schema public
	heapAMOID        uint32 = 2
	btreeAMOID       uint32 = 403
	defaultCollOID   uint32 = 100
	cCollOID         uint32 = 950
	pgClassOID       uint32 = 1259
	pgConstraintOID  uint32 = 2606
	databaseOID      uint32 = 5
	utf8Encoding            = 6
)

// TableOID is the OID of the table with id.
func TableOID(id uint64) uint32 { return uint32(16384 + id) }

func indexOID(id uint64) uint32      { return 0x40000000 + uint32(id) }
func constraintOID(id uint64) uint32 { return 0x48000000 + uint32(id) }
func attrdefOID(id uint64, col int) uint32 {
	return 0x50000000 + uint32(id)<<10 + uint32(col)
}
func roleOID(i int) uint32 { return 0x30000000 + uint32(i) }
func sequenceOID(id uint64, col int) uint32 {
	return 0x58000000 + uint32(id)<<10 + uint32(col)
}

// sequenceName is the name of a serial column's sequence, as PostgreSQL
// names it.
func sequenceName(t *storage.TableDesc, col int) string {
	return t.Name + "_" + t.Columns[col].Name + "_seq"
}

// sysCatalog is the catalog as the system tables show it, read once per
// statement.
type sysCatalog struct {
	// tables are the tables of the session's database only.
	tables    []*storage.TableDesc
	databases []*storage.DatabaseDesc
	roles     []sysRole
	// priv is read when a privilege function or ACL first needs it.
	priv *privView
}

type sysRole struct {
	name                   string
	oid                    uint32
	super, login, createDB bool
	noInherit              bool
}

// catalog returns this statement's view of the catalog.
func (e *Env) catalog() (*sysCatalog, error) {
	if e.cat != nil {
		return e.cat, nil
	}
	c := &sysCatalog{}
	if e.DB != nil {
		cat := e.Catalog
		if cat == nil {
			cat = e.DB.Catalog(storage.PostgresOID)
		}
		c.tables = cat.Tables()
		c.databases = e.DB.Databases()
		roles, err := e.DB.Roles()
		if err != nil {
			return nil, err
		}
		// The bootstrap superuser (OID 10, the owner of every object) is
		// postgres if there is one, else the first superuser.
		boot := -1
		for i, r := range roles {
			if r.Superuser && (boot < 0 || r.Name == "postgres") {
				boot = i
			}
		}
		for i, r := range roles {
			oid := roleOID(i)
			if i == boot {
				oid = bootstrapRoleOID
			}
			c.roles = append(c.roles, sysRole{name: r.Name, oid: oid, super: r.Superuser, login: r.Login, createDB: r.Superuser || r.CreateDB, noInherit: r.NoInherit})
		}
		if boot < 0 {
			// Without stored superusers (trust authentication), the
			// session's user stands for the bootstrap superuser.
			name := e.User
			if name == "" {
				name = "postgres"
			}
			found := false
			for i := range c.roles {
				if c.roles[i].name == name {
					c.roles[i].oid, c.roles[i].super, c.roles[i].createDB, found = bootstrapRoleOID, true, true, true
				}
			}
			if !found {
				c.roles = append(c.roles, sysRole{name: name, oid: bootstrapRoleOID, super: true, login: true, createDB: true})
				sort.Slice(c.roles, func(i, j int) bool { return c.roles[i].name < c.roles[j].name })
			}
		}
	}
	// pg_database_owner is a built-in role of PostgreSQL 15 that owns
	// schema public.
	c.roles = append(c.roles, sysRole{name: "pg_database_owner", oid: databaseOwnerOID})
	sort.Slice(c.roles, func(i, j int) bool { return c.roles[i].name < c.roles[j].name })
	e.cat = c
	return c, nil
}

func (c *sysCatalog) tableByOID(oid uint32) *storage.TableDesc {
	for _, t := range c.tables {
		if TableOID(t.ID) == oid {
			return t
		}
	}
	return nil
}

// indexByOID returns the table of the index oid and, for a vector index,
// its descriptor (nil for the primary key's).
func (c *sysCatalog) indexByOID(oid uint32) (*storage.TableDesc, *storage.IndexDesc) {
	for _, t := range c.tables {
		if len(t.PrimaryKey) > 0 && indexOID(t.ID) == oid {
			return t, nil
		}
		for i := range t.Indexes {
			if indexOID(t.Indexes[i].ID) == oid {
				return t, &t.Indexes[i]
			}
		}
	}
	return nil, nil
}

// roleOIDByName returns the OID of role name; the bootstrap superuser's
// for "" (a database made with the data directory) or a role not known.
func (c *sysCatalog) roleOIDByName(name string) uint32 {
	for _, r := range c.roles {
		if r.name == name && name != "" {
			return r.oid
		}
	}
	return bootstrapRoleOID
}

func (c *sysCatalog) roleName(oid uint32) (string, bool) {
	for _, r := range c.roles {
		if r.oid == oid {
			return r.name, true
		}
	}
	return "", false
}

// relation is one row of pg_class.
type relation struct {
	oid       uint32
	name      string
	nsp       uint32
	kind      byte
	am        uint32
	natts     int
	hasIndex  bool
	table     *storage.TableDesc // user tables and their indexes
	sys       *plan.SysTable
	isPKIndex bool
}

func (c *sysCatalog) relations() []relation {
	var out []relation
	for _, st := range plan.SysTables {
		nsp, kind := plan.NamespaceCatalog, byte('r')
		if st.Schema == "information_schema" {
			nsp = plan.NamespaceInfoSchm
		}
		if st.View {
			kind = 'v'
		}
		out = append(out, relation{oid: st.OID, name: st.Name, nsp: nsp, kind: kind, am: heapAMOID, natts: len(st.Cols), sys: st})
		if kind == 'v' {
			out[len(out)-1].am = 0
		}
	}
	for _, t := range c.tables {
		if t.View != "" {
			out = append(out, relation{oid: TableOID(t.ID), name: t.Name, nsp: plan.NamespacePublic, kind: 'v', natts: len(t.Columns), table: t})
			continue
		}
		out = append(out, relation{oid: TableOID(t.ID), name: t.Name, nsp: plan.NamespacePublic, kind: 'r', am: heapAMOID,
			natts: len(t.Columns), hasIndex: len(t.PrimaryKey) > 0 || len(t.Indexes) > 0, table: t})
		if len(t.PrimaryKey) > 0 {
			out = append(out, relation{oid: indexOID(t.ID), name: pkeyName(t), nsp: plan.NamespacePublic, kind: 'i', am: btreeAMOID,
				natts: len(t.PrimaryKey), table: t, isPKIndex: true})
		}
		for _, ix := range t.Indexes {
			out = append(out, relation{oid: indexOID(ix.ID), name: ix.Name, nsp: plan.NamespacePublic, kind: 'i', am: vectorAMOID(ix.Method),
				natts: 1, table: t})
		}
		for i, c := range t.Columns {
			if c.Serial {
				out = append(out, relation{oid: sequenceOID(t.ID, i), name: sequenceName(t, i), nsp: plan.NamespacePublic, kind: 'S', natts: 3, table: t})
			}
		}
	}
	return out
}

func pkeyName(t *storage.TableDesc) string { return t.Name + "_pkey" }

func (c *sysCatalog) relationByOID(oid uint32) (relation, bool) {
	for _, r := range c.relations() {
		if r.oid == oid {
			return r, true
		}
	}
	return relation{}, false
}

// namespaces lists pg_namespace: oid and name.
var namespaces = []struct {
	oid  uint32
	name string
}{
	{plan.NamespaceCatalog, "pg_catalog"},
	{plan.NamespaceToast, "pg_toast"},
	{plan.NamespacePublic, "public"},
	{plan.NamespaceInfoSchm, "information_schema"},
}

func namespaceName(oid uint32) (string, bool) {
	for _, n := range namespaces {
		if n.oid == oid {
			return n.name, true
		}
	}
	return "", false
}

func namespaceOID(name string) (uint32, bool) {
	for _, n := range namespaces {
		if n.name == name {
			return n.oid, true
		}
	}
	return 0, false
}

// sysType is one builtin type of pg_type.
type sysType struct {
	oid      uint32
	name     string // typname
	sqlName  string // format_type's spelling
	len      int
	category byte
	array    uint32
	typtype  byte
	pref     bool
	coll     uint32
}

// builtinTypes are the types deeplaked knows or that clients look up by OID,
// with PostgreSQL 15's OIDs. Arrays follow from array.
var builtinTypes = []sysType{
	{oid: 16, name: "bool", sqlName: "boolean", len: 1, category: 'B', array: 1000, pref: true},
	{oid: 17, name: "bytea", sqlName: "bytea", len: -1, category: 'U', array: 1001},
	{oid: 18, name: "char", sqlName: "\"char\"", len: 1, category: 'Z', array: 1002},
	{oid: 19, name: "name", sqlName: "name", len: 64, category: 'S', array: 1003, coll: cCollOID},
	{oid: 20, name: "int8", sqlName: "bigint", len: 8, category: 'N', array: 1016},
	{oid: 21, name: "int2", sqlName: "smallint", len: 2, category: 'N', array: 1005},
	{oid: 22, name: "int2vector", sqlName: "int2vector", len: -1, category: 'A', array: 1006},
	{oid: 23, name: "int4", sqlName: "integer", len: 4, category: 'N', array: 1007},
	{oid: 24, name: "regproc", sqlName: "regproc", len: 4, category: 'N', array: 1008},
	{oid: 25, name: "text", sqlName: "text", len: -1, category: 'S', array: 1009, pref: true, coll: defaultCollOID},
	{oid: 26, name: "oid", sqlName: "oid", len: 4, category: 'N', array: 1028, pref: true},
	{oid: 30, name: "oidvector", sqlName: "oidvector", len: -1, category: 'A', array: 1013},
	{oid: 114, name: "json", sqlName: "json", len: -1, category: 'U', array: 199},
	{oid: 700, name: "float4", sqlName: "real", len: 4, category: 'N', array: 1021},
	{oid: 701, name: "float8", sqlName: "double precision", len: 8, category: 'N', array: 1022, pref: true},
	{oid: 705, name: "unknown", sqlName: "unknown", len: -2, category: 'X', typtype: 'p'},
	{oid: 1042, name: "bpchar", sqlName: "character", len: -1, category: 'S', array: 1014, coll: defaultCollOID},
	{oid: 1043, name: "varchar", sqlName: "character varying", len: -1, category: 'S', array: 1015, coll: defaultCollOID},
	{oid: 1082, name: "date", sqlName: "date", len: 4, category: 'D', array: 1182},
	{oid: 1083, name: "time", sqlName: "time without time zone", len: 8, category: 'D', array: 1183},
	{oid: 1114, name: "timestamp", sqlName: "timestamp without time zone", len: 8, category: 'D', array: 1115},
	{oid: 1184, name: "timestamptz", sqlName: "timestamp with time zone", len: 8, category: 'D', array: 1185, pref: true},
	{oid: 1186, name: "interval", sqlName: "interval", len: 16, category: 'T', array: 1187, pref: true},
	{oid: 1700, name: "numeric", sqlName: "numeric", len: -1, category: 'N', array: 1231},
	{oid: 2205, name: "regclass", sqlName: "regclass", len: 4, category: 'N', array: 2210},
	{oid: 2206, name: "regtype", sqlName: "regtype", len: 4, category: 'N', array: 2211},
	{oid: 2249, name: "record", sqlName: "record", len: -1, category: 'P', array: 2287, typtype: 'p'},
	{oid: 2278, name: "void", sqlName: "void", len: 4, category: 'P', typtype: 'p'},
	{oid: 2950, name: "uuid", sqlName: "uuid", len: 16, category: 'U', array: 2951},
	{oid: 3802, name: "jsonb", sqlName: "jsonb", len: -1, category: 'U', array: 3807},
	{oid: 4089, name: "regnamespace", sqlName: "regnamespace", len: 4, category: 'N', array: 4090},
	{oid: types.OIDVector, name: "vector", sqlName: "vector", len: -1, category: 'U'},
	{oid: types.OIDHalfVec, name: "halfvec", sqlName: "halfvec", len: -1, category: 'U'},
}

// allTypes is builtinTypes followed by their array types.
func allTypes() []sysType {
	out := append([]sysType{}, builtinTypes...)
	for _, t := range builtinTypes {
		if t.array != 0 {
			out = append(out, sysType{oid: t.array, name: "_" + t.name, sqlName: t.sqlName + "[]", len: -1, category: 'A', coll: t.coll})
		}
	}
	return out
}

func typeByOID(oid uint32) (sysType, bool) {
	for _, t := range allTypes() {
		if t.oid == oid {
			return t, true
		}
	}
	return sysType{}, false
}

// typeElem returns the element type OID of array type oid, or 0.
func typeElem(oid uint32) uint32 {
	for _, t := range builtinTypes {
		if t.array == oid {
			return t.oid
		}
	}
	return 0
}

// formatType is PostgreSQL's format_type(oid, typmod).
func formatType(oid uint32, typmod int64) string {
	t, ok := typeByOID(oid)
	if !ok {
		return "???"
	}
	name := t.sqlName
	base, suffix := name, ""
	if strings.HasSuffix(name, "[]") {
		base, suffix = strings.TrimSuffix(name, "[]"), "[]"
	}
	if typmod >= 0 {
		switch strings.TrimPrefix(t.name, "_") {
		case "varchar", "bpchar":
			if typmod >= 4 {
				base += "(" + strconv.FormatInt(typmod-4, 10) + ")"
			}
		case "vector", "halfvec":
			base += "(" + strconv.FormatInt(typmod, 10) + ")"
		case "numeric":
			if typmod >= 4 {
				m := typmod - 4
				base += "(" + strconv.FormatInt(m>>16, 10) + "," + strconv.FormatInt(m&0x7ff, 10) + ")"
			}
		}
	}
	return base + suffix
}

// typeOIDByName resolves a type name as regtype input and to_regtype do.
func typeOIDByName(s string) (uint32, bool) {
	s = strings.TrimSpace(strings.ToLower(s))
	s = strings.TrimPrefix(s, "pg_catalog.")
	s = strings.Trim(s, "\"")
	array := strings.HasSuffix(s, "[]")
	s = strings.TrimSuffix(s, "[]")
	if i := strings.IndexByte(s, '('); i > 0 {
		s = strings.TrimSpace(s[:i])
	}
	aliases := map[string]string{"integer": "int4", "int": "int4", "bigint": "int8", "smallint": "int2",
		"boolean": "bool", "real": "float4", "double precision": "float8", "float": "float8",
		"character varying": "varchar", "character": "bpchar", "char": "char", "decimal": "numeric",
		"timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz"}
	if a, ok := aliases[s]; ok {
		s = a
	}
	for _, t := range builtinTypes {
		if t.name == s {
			if array {
				return t.array, t.array != 0
			}
			return t.oid, true
		}
	}
	// An array type by its internal name: _float4 is real[].
	if elem, ok := strings.CutPrefix(s, "_"); ok && !array {
		for _, t := range builtinTypes {
			if t.name == elem && t.array != 0 {
				return t.array, true
			}
		}
	}
	return 0, false
}

// columnType describes a column's type as pg_attribute does.
func columnType(t types.Type) (oid uint32, typmod int64, length int, ndims int) {
	oid = t.OID()
	typmod = int64(t.Typmod())
	length = int(t.Size())
	if t.Kind == types.Tensor {
		ndims = len(t.Shape)
	}
	return
}

func typeAlign(length int) string {
	switch length {
	case 1:
		return "c"
	case 2:
		return "s"
	case 4:
		return "i"
	case 8:
		return "d"
	}
	return "i"
}

// relationByName resolves a regclass input: [schema.]name, unquoted names
// folded to lower case.
func (c *sysCatalog) relationByName(s string) (uint32, bool) {
	schema, name := splitQualified(s)
	schema, name = identPart(schema), identPart(name)
	for _, r := range c.relations() {
		if r.name != name {
			continue
		}
		if nsp, _ := namespaceName(r.nsp); schema == "" && (nsp == "pg_catalog" || nsp == "public") || nsp == schema {
			return r.oid, true
		}
	}
	return 0, false
}

// splitQualified splits schema.name at its first dot outside quotes.
func splitQualified(s string) (schema, name string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case '.':
			if !quoted {
				return s[:i], s[i+1:]
			}
		}
	}
	return "", s
}

func identPart(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], "\"\"", "\"")
	}
	return strings.ToLower(s)
}

// regclassName is regclass output: the relation's name, qualified when its
// schema is not on the search path.
func (c *sysCatalog) regclassName(oid uint32) string {
	r, ok := c.relationByOID(oid)
	if !ok {
		return strconv.FormatUint(uint64(oid), 10)
	}
	if r.nsp == plan.NamespaceInfoSchm {
		return "information_schema." + quoteIdent(r.name)
	}
	return quoteIdent(r.name)
}

// quoteIdent quotes s as an identifier where it needs to be.
func quoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			plain = false
			break
		}
	}
	if plain && !sqlKeywords[s] {
		return s
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\"\"") + "\""
}

// sqlKeywords are reserved words that must be quoted as identifiers.
var sqlKeywords = map[string]bool{
	"all": true, "and": true, "any": true, "array": true, "as": true, "asc": true, "case": true, "cast": true,
	"check": true, "collate": true, "column": true, "constraint": true, "create": true, "default": true,
	"desc": true, "distinct": true, "do": true, "else": true, "end": true, "false": true, "for": true,
	"foreign": true, "from": true, "grant": true, "group": true, "having": true, "in": true, "into": true,
	"limit": true, "not": true, "null": true, "offset": true, "on": true, "or": true, "order": true,
	"primary": true, "references": true, "select": true, "table": true, "then": true, "to": true,
	"true": true, "union": true, "unique": true, "user": true, "using": true, "when": true, "where": true,
	"with": true,
}

// indexDef is pg_get_indexdef for a table's primary key index (vec nil)
// or one of its vector indexes. With pretty, the table's schema is left
// out (it is on the search path).
func indexDef(t *storage.TableDesc, vec *storage.IndexDesc, col int, pretty bool) string {
	if vec != nil {
		if col > 0 {
			if col == 1 {
				return quoteIdent(t.Columns[vec.Column].Name)
			}
			return ""
		}
		schema := "public."
		if pretty {
			schema = ""
		}
		with := "lists='" + strconv.Itoa(vec.Lists) + "'"
		if vec.Method == "hnsw" {
			with = "m='" + strconv.Itoa(vec.M) + "', ef_construction='" + strconv.Itoa(vec.EfConstruction) + "'"
		}
		return "CREATE INDEX " + quoteIdent(vec.Name) + " ON " + schema + quoteIdent(t.Name) + " USING " + vec.Method +
			" (" + quoteIdent(t.Columns[vec.Column].Name) + " " + vec.OpClass + ") WITH (" + with + ")"
	}
	if col > 0 {
		if col <= len(t.PrimaryKey) {
			return quoteIdent(t.Columns[t.PrimaryKey[col-1]].Name)
		}
		return ""
	}
	schema := "public."
	if pretty {
		schema = ""
	}
	return "CREATE UNIQUE INDEX " + quoteIdent(pkeyName(t)) + " ON " + schema + quoteIdent(t.Name) + " USING btree (" + pkeyCols(t) + ")"
}

// The access methods of vector indexes, with deeplaked's fixed OIDs
// (pgvector's are assigned at CREATE EXTENSION).
const (
	hnswAMOID    uint32 = 16400
	ivfflatAMOID uint32 = 16401
)

func vectorAMOID(method string) uint32 {
	if method == "ivfflat" {
		return ivfflatAMOID
	}
	return hnswAMOID
}

func pkeyCols(t *storage.TableDesc) string {
	names := make([]string, len(t.PrimaryKey))
	for i, k := range t.PrimaryKey {
		names[i] = quoteIdent(t.Columns[k].Name)
	}
	return strings.Join(names, ", ")
}

// columnDefault is the DEFAULT of column i as pg_get_expr prints it.
func columnDefault(t *storage.TableDesc, i int) string {
	c := t.Columns[i]
	if c.Serial {
		return "nextval('" + quoteIdent(sequenceName(t, i)) + "'::regclass)"
	}
	d := c.Default
	if len(d) >= 2 && d[0] == '\'' && d[len(d)-1] == '\'' && c.Type.Kind != types.Tensor {
		// PostgreSQL stores a string default coerced to the column's type
		// and prints it with the cast: 'none'::text.
		oid, _, _, _ := columnType(c.Type)
		d += "::" + formatType(oid, -1)
	}
	return d
}

// encodingName is pg_encoding_to_char.
func encodingName(enc int64) string {
	switch enc {
	case 0:
		return "SQL_ASCII"
	case utf8Encoding:
		return "UTF8"
	}
	return ""
}

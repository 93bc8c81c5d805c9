package plan

import (
	"strings"

	"github.com/deeplaked/deeplaked/types"
)

// SysTable is a table of pg_catalog or information_schema. It holds no
// rows: exec generates them from the catalog when a scan starts.
type SysTable struct {
	Schema string
	Name   string
	// OID is the table's PostgreSQL OID (pg_class.oid).
	OID uint32
	// View marks the tables PostgreSQL defines as views (pg_roles, the
	// information_schema tables).
	View bool
	Cols []SysColumn
}

// SysColumn is one column of a SysTable.
type SysColumn struct {
	Name string
	Type types.Type
}

// Namespace OIDs: PostgreSQL's for pg_catalog and public; information_schema
// has no fixed OID in PostgreSQL, so deeplaked picks one.
const (
	NamespaceCatalog  uint32 = 11
	NamespaceToast    uint32 = 99
	NamespacePublic   uint32 = 2200
	NamespaceInfoSchm uint32 = 13000
)

var sysColTypes = map[string]types.Type{
	"oid": {Kind: types.Oid}, "name": {Kind: types.Name}, "char": {Kind: types.Char},
	"regproc": {Kind: types.RegProc}, "regtype": {Kind: types.RegType}, "text": types.TypText, "bool": types.TypBool,
	"int2": types.TypInt2, "int4": types.TypInt4, "int8": types.TypInt8, "float4": types.TypFloat4,
	"int2[]": types.TensorOf(types.DTInt16, types.Ragged),
}

// sys defines a system table from "name:type" column specs.
func sys(schema, name string, oid uint32, view bool, cols string) *SysTable {
	t := &SysTable{Schema: schema, Name: name, OID: oid, View: view}
	for _, f := range strings.Fields(cols) {
		n, typ, _ := strings.Cut(f, ":")
		ct, ok := sysColTypes[typ]
		if !ok {
			panic("system table " + name + ": unknown column type " + typ)
		}
		t.Cols = append(t.Cols, SysColumn{Name: n, Type: ct})
	}
	return t
}

// SysTables lists every system table: PostgreSQL 15's columns (those of
// types deeplaked has; arrays and node trees are text), in its order.
var SysTables = []*SysTable{
	sys("pg_catalog", "pg_namespace", 2615, false, "oid:oid nspname:name nspowner:oid nspacl:text"),
	sys("pg_catalog", "pg_class", 1259, false, "oid:oid relname:name relnamespace:oid reltype:oid reloftype:oid relowner:oid relam:oid relfilenode:oid reltablespace:oid relpages:int4 reltuples:float4 relallvisible:int4 reltoastrelid:oid relhasindex:bool relisshared:bool relpersistence:char relkind:char relnatts:int2 relchecks:int2 relhasrules:bool relhastriggers:bool relhassubclass:bool relrowsecurity:bool relforcerowsecurity:bool relispopulated:bool relreplident:char relispartition:bool relrewrite:oid relacl:text reloptions:text relpartbound:text"),
	sys("pg_catalog", "pg_attribute", 1249, false, "attrelid:oid attname:name atttypid:oid attstattarget:int4 attlen:int2 attnum:int2 attndims:int4 attcacheoff:int4 atttypmod:int4 attbyval:bool attalign:char attstorage:char attcompression:char attnotnull:bool atthasdef:bool atthasmissing:bool attidentity:char attgenerated:char attisdropped:bool attislocal:bool attinhcount:int4 attcollation:oid attacl:text attoptions:text attfdwoptions:text attmissingval:text"),
	sys("pg_catalog", "pg_type", 1247, false, "oid:oid typname:name typnamespace:oid typowner:oid typlen:int2 typbyval:bool typtype:char typcategory:char typispreferred:bool typisdefined:bool typdelim:char typrelid:oid typsubscript:regproc typelem:oid typarray:oid typinput:regproc typoutput:regproc typreceive:regproc typsend:regproc typmodin:regproc typmodout:regproc typanalyze:regproc typalign:char typstorage:char typnotnull:bool typbasetype:oid typtypmod:int4 typndims:int4 typcollation:oid typdefaultbin:text typdefault:text typacl:text"),
	sys("pg_catalog", "pg_index", 2610, false, "indexrelid:oid indrelid:oid indnatts:int2 indnkeyatts:int2 indisunique:bool indnullsnotdistinct:bool indisprimary:bool indisexclusion:bool indimmediate:bool indisclustered:bool indisvalid:bool indcheckxmin:bool indisready:bool indislive:bool indisreplident:bool indkey:int2[] indcollation:text indclass:text indoption:int2[] indexprs:text indpred:text"),
	sys("pg_catalog", "pg_constraint", 2606, false, "oid:oid conname:name connamespace:oid contype:char condeferrable:bool condeferred:bool convalidated:bool conrelid:oid contypid:oid conindid:oid conparentid:oid confrelid:oid confupdtype:char confdeltype:char confmatchtype:char conislocal:bool coninhcount:int4 connoinherit:bool conkey:int2[] confkey:int2[] conpfeqop:text conppeqop:text conffeqop:text confdelsetcols:text conexclop:text conbin:text"),
	sys("pg_catalog", "pg_database", 1262, false, "oid:oid datname:name datdba:oid encoding:int4 datlocprovider:char datistemplate:bool datallowconn:bool datconnlimit:int4 datfrozenxid:int8 datminmxid:int8 dattablespace:oid datcollate:text datctype:text daticulocale:text datcollversion:text datacl:text"),
	sys("pg_catalog", "pg_roles", 12010, true, "rolname:name rolsuper:bool rolinherit:bool rolcreaterole:bool rolcreatedb:bool rolcanlogin:bool rolreplication:bool rolconnlimit:int4 rolpassword:text rolvaliduntil:text rolbypassrls:bool rolconfig:text oid:oid"),
	sys("pg_catalog", "pg_user", 12015, true, "usename:name usesysid:oid usecreatedb:bool usesuper:bool userepl:bool usebypassrls:bool passwd:text valuntil:text useconfig:text"),
	sys("pg_catalog", "pg_auth_members", 1261, false, "roleid:oid member:oid grantor:oid admin_option:bool"),
	sys("pg_catalog", "pg_settings", 12020, true, "name:text setting:text unit:text category:text short_desc:text extra_desc:text context:text vartype:text source:text min_val:text max_val:text enumvals:text boot_val:text reset_val:text sourcefile:text sourceline:int4 pending_restart:bool"),
	sys("pg_catalog", "pg_am", 2601, false, "oid:oid amname:name amhandler:regproc amtype:char"),
	sys("pg_catalog", "pg_extension", 3079, false, "oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:bool extversion:text extconfig:text extcondition:text"),
	sys("pg_catalog", "pg_description", 2609, false, "objoid:oid classoid:oid objsubid:int4 description:text"),
	sys("pg_catalog", "pg_shdescription", 2396, false, "objoid:oid classoid:oid description:text"),
	sys("pg_catalog", "pg_proc", 1255, false, "oid:oid proname:name pronamespace:oid proowner:oid prolang:oid procost:float4 prorows:float4 provariadic:oid prosupport:regproc prokind:char prosecdef:bool proleakproof:bool proisstrict:bool proretset:bool provolatile:char proparallel:char pronargs:int2 pronargdefaults:int2 prorettype:oid proargtypes:text proallargtypes:text proargmodes:text proargnames:text proargdefaults:text protrftypes:text prosrc:text probin:text prosqlbody:text proconfig:text proacl:text"),
	sys("pg_catalog", "pg_attrdef", 2604, false, "oid:oid adrelid:oid adnum:int2 adbin:text"),
	sys("pg_catalog", "pg_collation", 3456, false, "oid:oid collname:name collnamespace:oid collowner:oid collprovider:char collisdeterministic:bool collencoding:int4 collcollate:text collctype:text colliculocale:text collversion:text"),
	sys("pg_catalog", "pg_tablespace", 1213, false, "oid:oid spcname:name spcowner:oid spcacl:text spcoptions:text"),
	sys("pg_catalog", "pg_policy", 3256, false, "oid:oid polname:name polrelid:oid polcmd:char polpermissive:bool polroles:text polqual:text polwithcheck:text"),
	sys("pg_catalog", "pg_inherits", 2611, false, "inhrelid:oid inhparent:oid inhseqno:int4 inhdetachpending:bool"),
	sys("pg_catalog", "pg_trigger", 2620, false, "oid:oid tgrelid:oid tgparentid:oid tgname:name tgfoid:oid tgtype:int2 tgenabled:char tgisinternal:bool tgconstrrelid:oid tgconstrindid:oid tgconstraint:oid tgdeferrable:bool tginitdeferred:bool tgnargs:int2 tgattr:text tgargs:text tgqual:text tgoldtable:name tgnewtable:name"),
	sys("pg_catalog", "pg_statistic_ext", 3381, false, "oid:oid stxrelid:oid stxname:name stxnamespace:oid stxowner:oid stxstattarget:int4 stxkeys:text stxkind:text stxexprs:text"),
	sys("pg_catalog", "pg_publication", 6104, false, "oid:oid pubname:name pubowner:oid puballtables:bool pubinsert:bool pubupdate:bool pubdelete:bool pubtruncate:bool pubviaroot:bool"),
	sys("pg_catalog", "pg_publication_rel", 6106, false, "oid:oid prpubid:oid prrelid:oid prqual:text prattrs:int2[]"),
	sys("pg_catalog", "pg_publication_namespace", 6237, false, "oid:oid pnpubid:oid pnnspid:oid"),
	sys("pg_catalog", "pg_rewrite", 2618, false, "oid:oid rulename:name ev_class:oid ev_type:char ev_enabled:char is_instead:bool ev_qual:text ev_action:text"),
	sys("pg_catalog", "pg_depend", 2608, false, "classid:oid objid:oid objsubid:int4 refclassid:oid refobjid:oid refobjsubid:int4 deptype:char"),
	sys("pg_catalog", "pg_sequence", 2224, false, "seqrelid:oid seqtypid:oid seqstart:int8 seqincrement:int8 seqmax:int8 seqmin:int8 seqcache:int8 seqcycle:bool"),
	sys("pg_catalog", "pg_extension", 3079, false, "oid:oid extname:name extowner:oid extnamespace:oid extrelocatable:bool extversion:text extconfig:text extcondition:text"),
	sys("pg_catalog", "pg_enum", 3501, false, "oid:oid enumtypid:oid enumsortorder:float4 enumlabel:name"),
	sys("pg_catalog", "pg_foreign_table", 3118, false, "ftrelid:oid ftserver:oid ftoptions:text"),
	sys("pg_catalog", "pg_partitioned_table", 3350, false, "partrelid:oid partstrat:char partnatts:int2 partdefid:oid partattrs:text partclass:text partcollation:text partexprs:text"),
	sys("pg_catalog", "pg_event_trigger", 3466, false, "oid:oid evtname:name evtevent:name evtowner:oid evtfoid:oid evtenabled:char evttags:text"),
	sys("pg_catalog", "pg_tables", 12030, true, "schemaname:name tablename:name tableowner:name tablespace:name hasindexes:bool hasrules:bool hastriggers:bool rowsecurity:bool"),
	sys("pg_catalog", "pg_indexes", 12035, true, "schemaname:name tablename:name indexname:name tablespace:name indexdef:text"),
	sys("pg_catalog", "pg_views", 12040, true, "schemaname:name viewname:name viewowner:name definition:text"),
	sys("pg_catalog", "pg_matviews", 12045, true, "schemaname:name matviewname:name matviewowner:name tablespace:name hasindexes:bool ispopulated:bool definition:text"),
	sys("pg_catalog", "pg_sequences", 12050, true, "schemaname:name sequencename:name sequenceowner:name data_type:regtype start_value:int8 min_value:int8 max_value:int8 increment_by:int8 cycle:bool cache_size:int8 last_value:int8"),
	sys("pg_catalog", "pg_cast", 2605, false, "oid:oid castsource:oid casttarget:oid castfunc:oid castcontext:char castmethod:char"),
	sys("pg_catalog", "pg_operator", 2617, false, "oid:oid oprname:name oprnamespace:oid oprowner:oid oprkind:char oprcanmerge:bool oprcanhash:bool oprleft:oid oprright:oid oprresult:oid oprcom:oid oprnegate:oid oprcode:regproc oprrest:regproc oprjoin:regproc"),
	sys("pg_catalog", "pg_language", 2612, false, "oid:oid lanname:name lanowner:oid lanispl:bool lanpltrusted:bool lanplcallfoid:oid laninline:oid lanvalidator:oid lanacl:text"),
	sys("pg_catalog", "pg_opclass", 2616, false, "oid:oid opcmethod:oid opcname:name opcnamespace:oid opcowner:oid opcfamily:oid opcintype:oid opcdefault:bool opckeytype:oid"),
	sys("pg_catalog", "pg_range", 3541, false, "rngtypid:oid rngsubtype:oid rngmultitypid:oid rngcollation:oid rngsubopc:oid rngcanonical:regproc rngsubdiff:regproc"),
	sys("pg_catalog", "pg_opfamily", 2753, false, "oid:oid opfmethod:oid opfname:name opfnamespace:oid opfowner:oid"),
	sys("pg_catalog", "pg_ts_parser", 3601, false, "oid:oid prsname:name prsnamespace:oid prsstart:regproc prstoken:regproc prsend:regproc prsheadline:regproc prslextype:regproc"),
	sys("pg_catalog", "pg_ts_dict", 3600, false, "oid:oid dictname:name dictnamespace:oid dictowner:oid dicttemplate:oid dictinitoption:text"),
	sys("pg_catalog", "pg_ts_template", 3764, false, "oid:oid tmplname:name tmplnamespace:oid tmplinit:regproc tmpllexize:regproc"),
	sys("pg_catalog", "pg_aggregate", 2600, false, "aggfnoid:regproc aggkind:char aggnumdirectargs:int2 aggtransfn:regproc aggfinalfn:regproc aggtranstype:oid agginitval:text"),
	sys("pg_catalog", "pg_ts_config", 3602, false, "oid:oid cfgname:name cfgnamespace:oid cfgowner:oid cfgparser:oid"),
	sys("pg_catalog", "pg_foreign_server", 1417, false, "oid:oid srvname:name srvowner:oid srvfdw:oid srvtype:text srvversion:text srvacl:text srvoptions:text"),
	sys("pg_catalog", "pg_foreign_data_wrapper", 2328, false, "oid:oid fdwname:name fdwowner:oid fdwhandler:oid fdwvalidator:oid fdwacl:text fdwoptions:text"),
	sys("pg_catalog", "pg_user_mapping", 1418, false, "oid:oid umuser:oid umserver:oid umoptions:text"),
	sys("pg_catalog", "pg_db_role_setting", 2964, false, "setdatabase:oid setrole:oid setconfig:text"),
	sys("pg_catalog", "pg_conversion", 2607, false, "oid:oid conname:name connamespace:oid conowner:oid conforencoding:int4 contoencoding:int4 conproc:regproc condefault:bool"),
	sys("pg_catalog", "pg_largeobject_metadata", 2995, false, "oid:oid lomowner:oid lomacl:text"),
	sys("pg_catalog", "pg_init_privs", 3394, false, "objoid:oid classoid:oid objsubid:int4 privtype:char initprivs:text"),
	sys("information_schema", "schemata", 13100, true, "catalog_name:name schema_name:name schema_owner:name default_character_set_catalog:name default_character_set_schema:name default_character_set_name:name sql_path:text"),
	sys("information_schema", "tables", 13110, true, "table_catalog:name table_schema:name table_name:name table_type:text self_referencing_column_name:name reference_generation:text user_defined_type_catalog:name user_defined_type_schema:name user_defined_type_name:name is_insertable_into:text is_typed:text commit_action:text"),
	sys("information_schema", "table_privileges", 13130, true, "grantor:name grantee:name table_catalog:name table_schema:name table_name:name privilege_type:text is_grantable:text with_hierarchy:text"),
	sys("information_schema", "role_table_grants", 13140, true, "grantor:name grantee:name table_catalog:name table_schema:name table_name:name privilege_type:text is_grantable:text with_hierarchy:text"),
	sys("information_schema", "columns", 13120, true, "table_catalog:name table_schema:name table_name:name column_name:name ordinal_position:int4 column_default:text is_nullable:text data_type:text character_maximum_length:int4 character_octet_length:int4 numeric_precision:int4 numeric_precision_radix:int4 numeric_scale:int4 datetime_precision:int4 interval_type:text interval_precision:int4 character_set_catalog:name character_set_schema:name character_set_name:name collation_catalog:name collation_schema:name collation_name:name domain_catalog:name domain_schema:name domain_name:name udt_catalog:name udt_schema:name udt_name:name scope_catalog:name scope_schema:name scope_name:name maximum_cardinality:int4 dtd_identifier:name is_self_referencing:text is_identity:text identity_generation:text identity_start:text identity_increment:text identity_maximum:text identity_minimum:text identity_cycle:text is_generated:text generation_expression:text is_updatable:text"),
}

// LookupSysTable returns the system table schema.name, or nil.
func LookupSysTable(schema, name string) *SysTable {
	for _, t := range SysTables {
		if t.Schema == schema && t.Name == name {
			return t
		}
	}
	return nil
}

// Func calls a catalog or session function (format_type, pg_get_userbyid,
// current_setting, a reg* type's input or output, ...) by name; exec
// evaluates it row by row against the catalog.
type Func struct {
	Name string
	Args []Expr
	Typ  types.Type
}

func (e *Func) Type() types.Type { return e.Typ }

func (e *Func) String() string {
	var b strings.Builder
	b.WriteString(e.Name + "(")
	for i, a := range e.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	return b.String() + ")"
}

// Extension is a PostgreSQL extension deeplaked provides built in: CREATE
// EXTENSION accepts its name and pg_extension lists it.
type Extension struct {
	Name    string
	Version string // the version whose surface is built in
	OID     uint32
}

// Extensions lists the built-in extensions.
var Extensions = []Extension{{Name: "vector", Version: "0.8.0", OID: 16380}}

// FindExtension returns the built-in extension name.
func FindExtension(name string) (Extension, bool) {
	for _, e := range Extensions {
		if e.Name == name {
			return e, true
		}
	}
	return Extension{}, false
}

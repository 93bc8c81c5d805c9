package exec

import (
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
)

// privView is what the privilege functions and the catalog's ACL columns
// read: the roles as the session's privileges are decided, the current
// role, and schema public's ACL.
type privView struct {
	auth   *storage.Auth
	role   string
	nspACL storage.ACL
}

// privileges returns the statement's privilege view, read once.
func (e *Env) privileges() (*privView, error) {
	c, err := e.catalog()
	if err != nil {
		return nil, err
	}
	if c.priv != nil {
		return c.priv, nil
	}
	p := &privView{role: e.Role}
	if p.role == "" {
		p.role = e.User
	}
	switch {
	case e.Auth != nil:
		p.auth, err = e.Auth()
	case e.DB != nil:
		p.auth, err = e.DB.Auth()
	}
	if err != nil {
		return nil, err
	}
	if p.auth == nil {
		return nil, pgerror.AssertionFailedf("privileges without a catalog")
	}
	if e.DB != nil {
		oid := storage.PostgresOID
		if e.Catalog != nil {
			oid = e.Catalog.OID()
		}
		if p.nspACL, err = e.DB.SchemaACL(storage.ACLDatabase(oid), "public"); err != nil {
			return nil, err
		}
	}
	if p.nspACL == nil {
		p.nspACL = storage.PublicSchemaDefaultACL()
	}
	c.priv = p
	return p, nil
}

// ownerOID is the OID of t's owner.
func (c *sysCatalog) ownerOID(t *storage.TableDesc) uint32 {
	if t.Owner == "" {
		return bootstrapRoleOID
	}
	return c.roleOIDByName(t.Owner)
}

// ownerOf is the name of t's owner as the catalog shows it.
func (c *sysCatalog) ownerOf(t *storage.TableDesc) string {
	name, _ := c.roleName(c.ownerOID(t))
	return name
}

// ownerName is the name of t's owner.
func (p *privView) ownerName(t *storage.TableDesc) string { return p.auth.Owner(t) }

// aclText is an ACL as pg_class.relacl shows it: NULL while it is the
// default.
func aclText(acl storage.ACL) any {
	if acl == nil {
		return nil
	}
	return acl.String()
}

// relACL is pg_class.relacl of a relation.
func relACL(rel relation) any {
	switch {
	case rel.table == nil || rel.kind == 'i':
		return nil
	case rel.kind == 'S':
		for i, c := range rel.table.Columns {
			if c.Serial && sequenceOID(rel.table.ID, i) == rel.oid {
				return aclText(c.SeqACL)
			}
		}
		return nil
	}
	return aclText(rel.table.ACL)
}

// systemSchemaACL is the ACL PostgreSQL gives pg_catalog and
// information_schema: the bootstrap superuser may create, all may use.
func systemSchemaACL(boot string) storage.ACL {
	return storage.ACL{{Grantee: boot, Grantor: boot, Privs: storage.SchemaPrivileges}, {Grantor: boot, Privs: storage.PrivUsage}}
}

// parsePrivileges parses the privilege argument of the has_*_privilege
// functions: a comma-separated list of names, each optionally followed by
// WITH GRANT OPTION, in any case; allowed lists the names the function
// takes (PostgreSQL's convert_any_priv_string). The privileges and those
// asked with the grant option are returned.
func parsePrivileges(s string, allowed map[string]storage.Privilege) (privs, grant storage.Privilege, err error) {
	for _, part := range strings.Split(s, ",") {
		word := strings.Join(strings.Fields(part), " ")
		opt := false
		if w, ok := cutSuffixFold(word, " WITH GRANT OPTION"); ok {
			word, opt = w, true
		} else if w, ok := cutSuffixFold(word, " WITH ADMIN OPTION"); ok {
			word, opt = w, true
		}
		p, ok := allowed[strings.ToUpper(word)]
		if !ok {
			return 0, 0, pgerror.Newf(pgerror.InvalidParameterValue, "unrecognized privilege type: \"%s\"", strings.TrimSpace(part))
		}
		privs |= p
		if opt {
			grant |= p
		}
	}
	return privs, grant, nil
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

var (
	tablePrivNames = map[string]storage.Privilege{"SELECT": storage.PrivSelect, "INSERT": storage.PrivInsert,
		"UPDATE": storage.PrivUpdate, "DELETE": storage.PrivDelete, "TRUNCATE": storage.PrivTruncate,
		"REFERENCES": storage.PrivReferences, "TRIGGER": storage.PrivTrigger}
	columnPrivNames = map[string]storage.Privilege{"SELECT": storage.PrivSelect, "INSERT": storage.PrivInsert,
		"UPDATE": storage.PrivUpdate, "REFERENCES": storage.PrivReferences}
	schemaPrivNames   = map[string]storage.Privilege{"USAGE": storage.PrivUsage, "CREATE": storage.PrivCreate}
	databasePrivNames = map[string]storage.Privilege{"CREATE": storage.PrivCreate, "CONNECT": storage.PrivConnect,
		"TEMPORARY": storage.PrivTemporary, "TEMP": storage.PrivTemporary}
	// pg_has_role's: MEMBER is membership, USAGE having the role's
	// privileges; WITH ADMIN OPTION (or GRANT OPTION) asks for the admin
	// option.
	rolePrivNames = map[string]storage.Privilege{"MEMBER": storage.PrivConnect, "USAGE": storage.PrivUsage}
)

// anyHeld reports whether what (privs, some asked with the grant option)
// is satisfied by one of them being held, as PostgreSQL's has_*_privilege
// functions answer: true if any listed privilege is held.
func anyHeld(have, haveGrant, privs, grant storage.Privilege) bool {
	for p := storage.Privilege(1); p != 0 && p <= privs; p <<= 1 {
		if privs&p == 0 {
			continue
		}
		if grant&p != 0 {
			if haveGrant&p != 0 {
				return true
			}
		} else if have&p != 0 {
			return true
		}
	}
	return false
}

// privilegeFunc evaluates has_table_privilege and its kin for row i:
// the optional first argument is the role (a name or an OID), then the
// object (a name or an OID; for has_column_privilege also the column),
// then the privileges. ok is false for an OID naming nothing, which gives
// NULL.
func (f *funcEval) privilegeFunc(cat *sysCatalog, i int) (result, ok bool, err error) {
	p, err := f.env.privileges()
	if err != nil {
		return false, false, err
	}
	name := f.fn.Name
	nobj := 1
	if name == "has_column_privilege" {
		nobj = 2
	}
	args := len(f.vals)
	role := p.role
	k := 0
	if args == nobj+2 {
		r, found, err := f.roleArg(cat, p, 0, i)
		if err != nil || !found {
			return false, false, err
		}
		role, k = r, 1
	}
	privText := f.str(args-1, i)
	a := p.auth
	switch name {
	case "has_table_privilege", "has_any_column_privilege", "has_column_privilege":
		names := tablePrivNames
		if name != "has_table_privilege" {
			names = columnPrivNames
		}
		privs, grant, err := parsePrivileges(privText, names)
		if err != nil {
			return false, false, err
		}
		var oid uint32
		if f.isOIDArg(k) {
			oid = f.oid(k, i)
			if _, found := cat.relationByOID(oid); !found {
				return false, false, nil
			}
		} else {
			var found bool
			if oid, found = cat.relationByName(f.str(k, i)); !found {
				return false, false, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", f.str(k, i))
			}
		}
		rel, _ := cat.relationByOID(oid)
		if name == "has_column_privilege" {
			col := f.str(k+1, i)
			if !relationHasColumn(rel, col) {
				return false, false, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", col, rel.name)
			}
		}
		if rel.table == nil {
			// The catalog: PUBLIC may read it, superusers do anything.
			if a.Superuser(role) {
				return true, true, nil
			}
			return privs&storage.PrivSelect != 0 && grant&storage.PrivSelect == 0, true, nil
		}
		kind, acl := storage.ObjectTable, rel.table.ACL
		if rel.kind == 'S' {
			kind, acl = storage.ObjectSequence, relACLOf(rel)
		}
		have, haveGrant := a.Mask(kind, acl, p.ownerName(rel.table), role)
		return anyHeld(have, haveGrant, privs, grant), true, nil
	case "has_schema_privilege":
		privs, grant, err := parsePrivileges(privText, schemaPrivNames)
		if err != nil {
			return false, false, err
		}
		var nsp string
		if f.isOIDArg(k) {
			var found bool
			if nsp, found = namespaceName(f.oid(k, i)); !found {
				return false, false, nil
			}
		} else {
			nsp = identPart(f.str(k, i))
			if _, found := namespaceOID(nsp); !found {
				return false, false, pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", nsp)
			}
		}
		acl, owner := p.nspACL, storage.PublicSchemaOwner
		if nsp != "public" {
			owner = a.Bootstrap()
			acl = systemSchemaACL(owner)
		}
		have, haveGrant := a.Mask(storage.ObjectSchema, acl, owner, role)
		return anyHeld(have, haveGrant, privs, grant), true, nil
	case "has_database_privilege":
		privs, grant, err := parsePrivileges(privText, databasePrivNames)
		if err != nil {
			return false, false, err
		}
		if f.isOIDArg(k) && f.oid(k, i) != databaseOID {
			return false, false, nil
		}
		owner := a.Bootstrap()
		have, haveGrant := a.Mask(storage.ObjectDatabase, nil, owner, role)
		return anyHeld(have, haveGrant, privs, grant), true, nil
	case "pg_has_role":
		privs, grant, err := parsePrivileges(privText, rolePrivNames)
		if err != nil {
			return false, false, err
		}
		target, found, err := f.roleArg(cat, p, k, i)
		if err != nil || !found {
			return false, false, err
		}
		var have, haveGrant storage.Privilege
		if a.IsMemberOf(role, target) {
			have |= storage.PrivConnect
		}
		if a.HasPrivsOf(role, target) {
			have |= storage.PrivUsage
		}
		if a.HasAdminOf(role, target) {
			haveGrant = storage.PrivConnect | storage.PrivUsage
		}
		return anyHeld(have, haveGrant, privs, grant), true, nil
	}
	return false, false, pgerror.AssertionFailedf("privilege function %s", name)
}

// isOIDArg reports whether argument k is an OID (an integer or oid value)
// rather than a name.
func (f *funcEval) isOIDArg(k int) bool {
	t := f.fn.Args[k].Type()
	return t.IsInteger() || t.IsOID()
}

// roleArg resolves the role argument k: a name (42704 if no such role) or
// an OID (found false if none has it). A role name a statement reads is
// as written: public names PUBLIC.
func (f *funcEval) roleArg(cat *sysCatalog, p *privView, k, i int) (string, bool, error) {
	if f.isOIDArg(k) {
		name, found := cat.roleName(f.oid(k, i))
		return name, found, nil
	}
	name := f.str(k, i)
	if !p.auth.Exists(name) && name != storage.PublicSchemaOwner {
		if _, found := cat.roleOID(name); !found {
			return "", false, pgerror.Newf(pgerror.UndefinedObject, "role \"%s\" does not exist", name)
		}
	}
	return name, true, nil
}

func (c *sysCatalog) roleOID(name string) (uint32, bool) {
	for _, r := range c.roles {
		if r.name == name {
			return r.oid, true
		}
	}
	return 0, false
}

func relACLOf(rel relation) storage.ACL {
	for i, c := range rel.table.Columns {
		if c.Serial && sequenceOID(rel.table.ID, i) == rel.oid {
			return c.SeqACL
		}
	}
	return nil
}

func relationHasColumn(rel relation, col string) bool {
	if rel.table != nil && rel.kind == 'r' {
		for _, c := range rel.table.Columns {
			if c.Name == col {
				return true
			}
		}
		return false
	}
	if rel.sys != nil {
		for _, c := range rel.sys.Cols {
			if c.Name == col {
				return true
			}
		}
	}
	return false
}

// visibleTable reports whether the current role may see t in
// information_schema: it has the owner's privileges or any privilege on
// it, as PostgreSQL's views filter.
func (p *privView) visibleTable(t *storage.TableDesc) bool {
	if p.auth.HasPrivsOf(p.role, p.ownerName(t)) {
		return true
	}
	have, _ := p.auth.Mask(storage.ObjectTable, t.ACL, p.ownerName(t), p.role)
	return have != 0
}

// tableGrants appends the rows of information_schema.table_privileges
// (onlyRoles false) or role_table_grants (true): one per privilege of
// each ACL item of the user tables whose grantor or grantee is a role the
// current role has the privileges of (or, for table_privileges, whose
// grantee is PUBLIC).
func tableGrants(env *Env, c *sysCatalog, r *sysRows, onlyRoles bool) {
	p, err := env.privileges()
	if err != nil {
		return
	}
	db := env.databaseName()
	for _, t := range c.tables {
		owner := p.ownerName(t)
		acl := t.ACL
		if acl == nil {
			acl = storage.DefaultACL(storage.ObjectTable, owner)
		}
		for _, it := range acl {
			enabled := func(n string) bool { return n != "" && p.auth.HasPrivsOf(p.role, n) }
			if !enabled(it.Grantor) && !enabled(it.Grantee) && (onlyRoles || it.Grantee != "") {
				continue
			}
			grantee := it.Grantee
			if grantee == "" {
				grantee = "PUBLIC"
			}
			for b := 0; b < 7; b++ {
				priv := storage.Privilege(1) << b
				if it.Privs&priv == 0 {
					continue
				}
				grantable := "NO"
				if it.Grant&priv != 0 || it.Grantee != "" && p.auth.HasPrivsOf(it.Grantee, owner) {
					grantable = "YES"
				}
				hier := "NO"
				if priv == storage.PrivSelect {
					hier = "YES"
				}
				r.row(it.Grantor, grantee, db, "public", t.Name, priv.Name(), grantable, hier)
			}
		}
	}
}

// namespaceACL is pg_namespace.nspacl of schema oid.
func namespaceACL(p *privView, oid uint32) any {
	switch oid {
	case plan.NamespacePublic:
		return p.nspACL.String()
	case plan.NamespaceCatalog, plan.NamespaceInfoSchm:
		return systemSchemaACL(p.auth.Bootstrap()).String()
	}
	return nil
}

// authMembers appends pg_auth_members' rows.
func authMembers(env *Env, c *sysCatalog, r *sysRows) {
	if env.DB == nil {
		return
	}
	ms, err := env.DB.Memberships()
	if err != nil {
		return
	}
	for _, m := range ms {
		grantor := c.roleOIDByName(m.Grantor)
		r.row(c.roleOIDByName(m.Role), c.roleOIDByName(m.Member), grantor, m.Admin)
	}
}

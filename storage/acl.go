package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Privilege is a set of PostgreSQL privileges, one bit each, in the order
// of PostgreSQL's aclitem (ACL_INSERT is bit 0), which is also the order
// an aclitem prints them in.
type Privilege uint16

// Privileges. Tables take arwdDxt, sequences rwU, schemas UC, databases
// CTc.
const (
	PrivInsert     Privilege = 1 << iota // a
	PrivSelect                           // r
	PrivUpdate                           // w
	PrivDelete                           // d
	PrivTruncate                         // D
	PrivReferences                       // x
	PrivTrigger                          // t
	PrivExecute                          // X
	PrivUsage                            // U
	PrivCreate                           // C
	PrivTemporary                        // T
	PrivConnect                          // c
)

// privChars are the letters of the privileges in bit order.
const privChars = "arwdDxtXUCTc"

// The privileges each kind of object takes (ALL PRIVILEGES).
const (
	TablePrivileges    = PrivInsert | PrivSelect | PrivUpdate | PrivDelete | PrivTruncate | PrivReferences | PrivTrigger
	SequencePrivileges = PrivUsage | PrivSelect | PrivUpdate
	SchemaPrivileges   = PrivUsage | PrivCreate
	DatabasePrivileges = PrivCreate | PrivTemporary | PrivConnect
)

// privNames are the SQL names of the privileges, in bit order.
var privNames = []string{"INSERT", "SELECT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER", "EXECUTE", "USAGE", "CREATE", "TEMPORARY", "CONNECT"}

// ParsePrivilege returns the privilege a SQL name (SELECT, USAGE, TEMP, ...)
// names, in any case.
func ParsePrivilege(name string) (Privilege, bool) {
	name = strings.ToUpper(strings.TrimSpace(name))
	if name == "TEMP" {
		return PrivTemporary, true
	}
	for i, n := range privNames {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// Name returns the SQL name of a single privilege.
func (p Privilege) Name() string {
	for i, n := range privNames {
		if p == 1<<i {
			return n
		}
	}
	return fmt.Sprintf("privilege(%d)", uint16(p))
}

// ACLItem is one entry of an access control list: the privileges Grantor
// gave Grantee ("" is PUBLIC), those in Grant with the grant option.
type ACLItem struct {
	Grantee string `json:",omitempty"`
	Grantor string
	Privs   Privilege
	Grant   Privilege `json:",omitempty"`
}

// ACL is an object's access control list. A nil ACL means the object's
// default: its owner holds every privilege and PUBLIC what the kind of
// object gives it (nothing for tables; USAGE on schema public).
type ACL []ACLItem

// String prints the item as PostgreSQL's aclitem: grantee=privs/grantor,
// an empty grantee for PUBLIC and * after each privilege held with the
// grant option.
func (it ACLItem) String() string {
	var b strings.Builder
	if it.Grantee != "" {
		b.WriteString(aclName(it.Grantee))
	}
	b.WriteByte('=')
	for i := range len(privChars) {
		p := Privilege(1) << i
		if it.Privs&p != 0 {
			b.WriteByte(privChars[i])
			if it.Grant&p != 0 {
				b.WriteByte('*')
			}
		}
	}
	b.WriteByte('/')
	b.WriteString(aclName(it.Grantor))
	return b.String()
}

// String prints the list as PostgreSQL's aclitem[] text: {item,item}, an
// item quoted where it holds characters array syntax needs quoted.
func (a ACL) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		s := it.String()
		if strings.ContainsAny(s, "{},\"\\ ") {
			s = "\"" + strings.NewReplacer("\\", "\\\\", "\"", "\\\"").Replace(s) + "\""
		}
		b.WriteString(s)
	}
	b.WriteByte('}')
	return b.String()
}

// aclName is a role name as aclitem prints it (PostgreSQL's putid): quoted
// unless every character is alphanumeric or _.
func aclName(name string) string {
	safe := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80) {
			safe = false
			break
		}
	}
	if safe {
		return name
	}
	return "\"" + strings.ReplaceAll(name, "\"", "\"\"") + "\""
}

// ObjectKind is a kind of object that has an ACL.
type ObjectKind uint8

// Kinds of objects with privileges.
const (
	ObjectTable ObjectKind = iota + 1
	ObjectSequence
	ObjectSchema
	ObjectDatabase
)

// All returns every privilege objects of the kind take.
func (k ObjectKind) All() Privilege {
	switch k {
	case ObjectTable:
		return TablePrivileges
	case ObjectSequence:
		return SequencePrivileges
	case ObjectSchema:
		return SchemaPrivileges
	}
	return DatabasePrivileges
}

// DefaultACL is PostgreSQL's acldefault: the owner holds every privilege
// of the kind; PUBLIC holds USAGE on schema public and TEMPORARY and
// CONNECT on databases.
func DefaultACL(kind ObjectKind, owner string) ACL {
	acl := ACL{{Grantee: owner, Grantor: owner, Privs: kind.All()}}
	switch kind {
	case ObjectDatabase:
		acl = append(ACL{{Grantor: owner, Privs: PrivTemporary | PrivConnect}}, acl...)
	}
	return acl
}

// PublicSchemaOwner is the owner of schema public: pg_database_owner, as in
// PostgreSQL 15, which stands for the owner of the current database.
const PublicSchemaOwner = "pg_database_owner"

// PublicSchemaDefaultACL is schema public's ACL in a new PostgreSQL 15
// database: the database owner may create in it, everybody may use it.
func PublicSchemaDefaultACL() ACL {
	return ACL{
		{Grantee: PublicSchemaOwner, Grantor: PublicSchemaOwner, Privs: PrivUsage | PrivCreate},
		{Grantor: PublicSchemaOwner, Privs: PrivUsage},
	}
}

// Clone returns a copy of the list.
func (a ACL) Clone() ACL { return slices.Clone(a) }

// Auth is a view of the roles, their attributes and memberships at one
// point in time, against which privileges are decided.
type Auth struct {
	roles map[string]*Role
	// memberOf holds, by member, the roles it is a direct member of.
	memberOf map[string][]Membership
	// super names roles treated as superusers whatever their stored
	// attributes (the session user under trust authentication).
	super map[string]bool
}

// Membership is one grant of role membership: Member is a member of Role.
type Membership struct {
	Role, Member string
	Grantor      string
	Admin        bool
}

// Auth reads the roles and memberships.
func (db *DB) Auth() (*Auth, error) {
	// The view is built again only after a role or membership changed:
	// privilege checks ask for it at every statement.
	gen := db.rolesGen.Load()
	if c := db.auth.Load(); c != nil && c.gen == gen {
		return c.a, nil
	}
	a, err := db.readAuth()
	if err != nil {
		return nil, err
	}
	db.auth.Store(&cachedAuth{gen: gen, a: a})
	return a, nil
}

// cachedAuth is the Auth view read when rolesGen was gen.
type cachedAuth struct {
	gen uint64
	a   *Auth
}

// rolesChanged marks the Auth view stale: writers of roles and
// memberships call it (under rolesMu) once their write is done.
func (db *DB) rolesChanged() { db.rolesGen.Add(1) }

// readAuth reads the roles and memberships from the catalog.
func (db *DB) readAuth() (*Auth, error) {
	roles, err := db.Roles()
	if err != nil {
		return nil, err
	}
	ms, err := db.Memberships()
	if err != nil {
		return nil, err
	}
	a := &Auth{roles: make(map[string]*Role, len(roles)), memberOf: make(map[string][]Membership)}
	for _, r := range roles {
		a.roles[r.Name] = r
	}
	for _, m := range ms {
		a.memberOf[m.Member] = append(a.memberOf[m.Member], m)
	}
	return a, nil
}

// WithSuperuser returns a copy of the view in which name is a superuser.
func (a *Auth) WithSuperuser(name string) *Auth {
	b := *a
	b.super = map[string]bool{name: true}
	for k := range a.super {
		b.super[k] = true
	}
	return &b
}

// Role returns the stored role name, or nil.
func (a *Auth) Role(name string) *Role { return a.roles[name] }

// Exists reports whether name is a role: a stored one, or the session user
// trust authentication lets in.
func (a *Auth) Exists(name string) bool { return a.roles[name] != nil || a.super[name] }

// Bootstrap is the bootstrap superuser, the owner of tables made before
// tables had owners: postgres if it is a superuser, else the first
// superuser by name, else the session user trust authentication lets in.
func (a *Auth) Bootstrap() string {
	if r := a.roles["postgres"]; r != nil && r.Superuser {
		return "postgres"
	}
	best := ""
	for n, r := range a.roles {
		if r.Superuser && (best == "" || n < best) {
			best = n
		}
	}
	if best == "" {
		for n := range a.super {
			if best == "" || n < best {
				best = n
			}
		}
	}
	if best == "" {
		best = "postgres"
	}
	return best
}

// Owner returns the owner of table t.
func (a *Auth) Owner(t *TableDesc) string {
	if t.Owner == "" {
		return a.Bootstrap()
	}
	return t.Owner
}

// Superuser reports whether name is a superuser.
func (a *Auth) Superuser(name string) bool {
	if a.super[name] {
		return true
	}
	r := a.roles[name]
	return r != nil && r.Superuser
}

// MemberOf returns the direct memberships of member.
func (a *Auth) MemberOf(member string) []Membership { return a.memberOf[member] }

// rolesOf returns role and the roles it is a member of, directly or
// through other roles; with inherit, only through roles that inherit
// (PostgreSQL's ROLERECURSE_PRIVS), so the result are the roles whose
// privileges role has.
func (a *Auth) rolesOf(role string, inherit bool) []string {
	out := []string{role}
	seen := map[string]bool{role: true}
	for i := 0; i < len(out); i++ {
		r := out[i]
		if inherit {
			if ro := a.roles[r]; ro != nil && ro.NoInherit {
				continue
			}
		}
		for _, m := range a.memberOf[r] {
			if !seen[m.Role] {
				seen[m.Role] = true
				out = append(out, m.Role)
			}
		}
	}
	return out
}

// HasPrivsOf reports whether member has the privileges of role: it is
// role, a superuser, or a member of role through roles that inherit.
func (a *Auth) HasPrivsOf(member, role string) bool {
	if member == role || a.Superuser(member) {
		return true
	}
	return slices.Contains(a.rolesOf(member, true), role)
}

// IsMemberOf reports whether member is role, a superuser, or a member of
// role directly or indirectly (what SET ROLE needs).
func (a *Auth) IsMemberOf(member, role string) bool {
	if member == role || a.Superuser(member) {
		return true
	}
	return slices.Contains(a.rolesOf(member, false), role)
}

// HasAdminOf reports whether member may grant and revoke membership in
// role: a superuser, or a member WITH ADMIN OPTION (directly or through
// a role it is a member of).
func (a *Auth) HasAdminOf(member, role string) bool {
	if a.Superuser(member) {
		return true
	}
	for _, r := range a.rolesOf(member, false) {
		for _, m := range a.memberOf[r] {
			if m.Role == role && m.Admin {
				return true
			}
		}
	}
	return false
}

// Mask returns the privileges of acl (nil: the kind's default for owner)
// that role holds, and those it holds with the grant option, as
// PostgreSQL's aclmask: a superuser holds everything; a role with the
// owner's privileges holds every grant option; otherwise the items
// granted to PUBLIC, role, and the roles whose privileges it has.
func (a *Auth) Mask(kind ObjectKind, acl ACL, owner, role string) (privs, grant Privilege) {
	if a.Superuser(role) {
		return kind.All(), kind.All()
	}
	if owner == "" {
		owner = a.Bootstrap()
	}
	if acl == nil {
		acl = defaultFor(kind, owner)
	}
	roles := a.rolesOf(role, true)
	if owner != "" && slices.Contains(roles, owner) {
		grant = kind.All()
	}
	if owner == PublicSchemaOwner && a.isDatabaseOwner(role) {
		grant = kind.All()
	}
	for _, it := range acl {
		if it.Grantee == "" || slices.Contains(roles, it.Grantee) || it.Grantee == PublicSchemaOwner && a.isDatabaseOwner(role) {
			privs |= it.Privs
			grant |= it.Grant
		}
	}
	return privs | grant, grant
}

// isDatabaseOwner reports whether role is a member of pg_database_owner:
// the owner of the current database. Databases here are owned by the
// bootstrap superuser, so only superusers are.
func (a *Auth) isDatabaseOwner(role string) bool { return a.Superuser(role) }

func defaultFor(kind ObjectKind, owner string) ACL {
	if kind == ObjectSchema && owner == PublicSchemaOwner {
		return PublicSchemaDefaultACL()
	}
	return DefaultACL(kind, owner)
}

// directMask is PostgreSQL's aclmask_direct: the grant options of acl
// held by role itself (no PUBLIC, no inherited roles); the owner holds
// them all.
func directGrant(kind ObjectKind, acl ACL, owner, role string) Privilege {
	if role == owner {
		return kind.All()
	}
	var g Privilege
	for _, it := range acl {
		if it.Grantee == role {
			g |= it.Grant
		}
	}
	return g
}

// BestGrantor is PostgreSQL's select_best_grantor: the role a GRANT or
// REVOKE of privs by role acts as, and the grant options that role holds
// of privs. The owner (and any role with the owner's privileges, and
// superusers) act as the owner; others as themselves or the inherited
// role holding the most of the grant options.
func (a *Auth) BestGrantor(kind ObjectKind, acl ACL, owner, role string, privs Privilege) (string, Privilege) {
	if owner == "" {
		owner = a.Bootstrap()
	}
	if acl == nil {
		acl = defaultFor(kind, owner)
	}
	if a.Superuser(role) || role == owner || owner == PublicSchemaOwner && a.isDatabaseOwner(role) {
		return owner, privs
	}
	best, bestG := role, Privilege(0)
	for _, r := range a.rolesOf(role, true) {
		g := directGrant(kind, acl, owner, r) & privs
		if g == privs {
			return r, g
		}
		if bitCount(g) > bitCount(bestG) {
			best, bestG = r, g
		}
	}
	return best, bestG
}

func bitCount(p Privilege) int {
	n := 0
	for ; p != 0; p &= p - 1 {
		n++
	}
	return n
}

// ACLChange is one GRANT or REVOKE of privileges on an object.
type ACLChange struct {
	Revoke bool
	// GrantOption is WITH GRANT OPTION on a GRANT, GRANT OPTION FOR on a
	// REVOKE (which then takes only the grant option away).
	GrantOption bool
	Grantees    []string // "" is PUBLIC
	Grantor     string
	Privs       Privilege
	// Cascade revokes what grantees granted onwards with the grant options
	// taken from them; without it such grants are an error (2BP01).
	Cascade bool
}

// Apply returns acl (nil: the default for owner) with the change made, as
// PostgreSQL's merge_acl_with_grant: the items of one grantee and grantor
// merge; an item left without privileges goes.
func (a *Auth) Apply(kind ObjectKind, acl ACL, owner string, ch ACLChange) (ACL, error) {
	if owner == "" {
		owner = a.Bootstrap()
	}
	if acl == nil {
		acl = defaultFor(kind, owner)
	}
	acl = acl.Clone()
	for _, g := range ch.Grantees {
		var err error
		acl, err = a.update(kind, acl, owner, g, ch.Grantor, ch.Privs, ch.GrantOption, ch.Revoke, ch.Cascade)
		if err != nil {
			return nil, err
		}
	}
	return acl, nil
}

func (a *Auth) update(kind ObjectKind, acl ACL, owner, grantee, grantor string, privs Privilege, option, revoke, cascade bool) (ACL, error) {
	i := slices.IndexFunc(acl, func(it ACLItem) bool { return it.Grantee == grantee && it.Grantor == grantor })
	if !revoke {
		if i < 0 {
			acl = append(acl, ACLItem{Grantee: grantee, Grantor: grantor})
			i = len(acl) - 1
		}
		acl[i].Privs |= privs
		if option {
			acl[i].Grant |= privs
		}
		return acl, nil
	}
	if i < 0 {
		return acl, nil
	}
	oldGrant := acl[i].Grant
	acl[i].Grant &^= privs
	if !option {
		acl[i].Privs &^= privs
	}
	lost := oldGrant &^ acl[i].Grant
	if acl[i].Privs == 0 {
		acl = slices.Delete(acl, i, i+1)
	}
	if lost != 0 && grantee != "" {
		return a.revokeDependent(kind, acl, owner, grantee, lost, cascade)
	}
	return acl, nil
}

// revokeDependent is PostgreSQL's recursive_revoke: grantee lost the grant
// options lost; what it granted with them goes too (CASCADE), unless it
// still holds them otherwise.
func (a *Auth) revokeDependent(kind ObjectKind, acl ACL, owner, grantee string, lost Privilege, cascade bool) (ACL, error) {
	if grantee == owner {
		return acl, nil
	}
	_, still := a.maskNoSuper(kind, acl, owner, grantee)
	lost &^= still
	if lost == 0 {
		return acl, nil
	}
	for j := 0; j < len(acl); j++ {
		it := acl[j]
		if it.Grantor != grantee || it.Privs&lost == 0 {
			continue
		}
		if !cascade {
			return nil, pgerror.New(pgerror.DependentObjectsStillExist, "dependent privileges exist").
				WithHint("Use CASCADE to revoke them too.")
		}
		var err error
		acl, err = a.update(kind, acl, owner, it.Grantee, grantee, lost, false, true, true)
		if err != nil {
			return nil, err
		}
		j = -1 // the list changed: look again from its start
	}
	return acl, nil
}

// maskNoSuper is Mask without the superuser shortcut: what the list gives.
func (a *Auth) maskNoSuper(kind ObjectKind, acl ACL, owner, role string) (privs, grant Privilege) {
	roles := a.rolesOf(role, true)
	if slices.Contains(roles, owner) {
		grant = kind.All()
	}
	for _, it := range acl {
		if it.Grantee == "" || slices.Contains(roles, it.Grantee) {
			privs |= it.Privs
			grant |= it.Grant
		}
	}
	return privs, grant
}

// NewOwner is PostgreSQL's aclnewowner: acl with every mention of the old
// owner, as grantee or grantor, replaced by the new one (items that then
// coincide merge).
func NewOwner(acl ACL, oldOwner, newOwner string) ACL {
	if acl == nil {
		return nil
	}
	var out ACL
	for _, it := range acl {
		if it.Grantee == oldOwner {
			it.Grantee = newOwner
		}
		if it.Grantor == oldOwner {
			it.Grantor = newOwner
		}
		if j := slices.IndexFunc(out, func(o ACLItem) bool { return o.Grantee == it.Grantee && o.Grantor == it.Grantor }); j >= 0 {
			out[j].Privs |= it.Privs
			out[j].Grant |= it.Grant
			continue
		}
		out = append(out, it)
	}
	return out
}

// AlterTable replaces the descriptor of table name of database postgres
// (of id, unless id is 0) with a copy fn changed, durably.
func (db *DB) AlterTable(name string, id uint64, fn func(*TableDesc) error) error {
	return db.postgres().AlterTable(name, id, fn)
}

// AlterTable replaces the descriptor of table name (of id, unless id is 0)
// with a copy fn changed, durably. Only fields the table's data does not
// depend on (its owner, its ACL) may change this way.
func (c *Catalog) AlterTable(name string, id uint64, fn func(*TableDesc) error) error {
	db := c.db
	db.catMu.Lock()
	defer db.catMu.Unlock()
	ts, ok := db.tables[tableKey{c.oid, name}]
	if !ok || id != 0 && ts.desc.ID != id {
		return undefinedTable(name)
	}
	desc := *ts.desc
	desc.Columns = slices.Clone(desc.Columns)
	if err := fn(&desc); err != nil {
		return err
	}
	if err := db.putDesc(&desc); err != nil {
		return err
	}
	ts.desc = &desc
	return nil
}

// ACLDatabase is how schema ACL and default privilege keys name database
// oid: by its OID, which a rename does not change.
func ACLDatabase(oid uint32) string { return strconv.FormatUint(uint64(oid), 10) }

// DefaultDatabase is database postgres as ACLDatabase names it.
var DefaultDatabase = ACLDatabase(PostgresOID)

// SchemaACL returns the ACL of schema in database, nil while it has its
// default.
func (db *DB) SchemaACL(database, schema string) (ACL, error) {
	var acl ACL
	ok, err := db.getJSON(nspACLKey(database, schema), &acl)
	if err != nil || !ok {
		return nil, err
	}
	return acl, nil
}

// SetSchemaACL stores the ACL of schema in database.
func (db *DB) SetSchemaACL(database, schema string, acl ACL) error {
	return db.putJSON(nspACLKey(database, schema), acl)
}

// aclMu serializes read-modify-write changes of schema ACLs and default
// privileges.
var aclMu sync.Mutex

// UpdateSchemaACL replaces the ACL of schema in database (nil: its
// default) with what fn makes of it, atomically with other updates.
func (db *DB) UpdateSchemaACL(database, schema string, fn func(ACL) (ACL, error)) error {
	aclMu.Lock()
	defer aclMu.Unlock()
	acl, err := db.SchemaACL(database, schema)
	if err != nil {
		return err
	}
	if acl, err = fn(acl); err != nil {
		return err
	}
	return db.SetSchemaACL(database, schema, acl)
}

// UpdateDefaultPrivileges replaces the default privileges of role in
// schema for kind (nil: none) with what fn makes of them.
func (db *DB) UpdateDefaultPrivileges(database, role, schema string, kind ObjectKind, fn func(ACL) (ACL, error)) error {
	aclMu.Lock()
	defer aclMu.Unlock()
	var d DefaultPrivileges
	if _, err := db.getJSON(defACLKey(database, role, schema, kind), &d); err != nil {
		return err
	}
	acl, err := fn(d.ACL)
	if err != nil {
		return err
	}
	return db.SetDefaultPrivileges(database, DefaultPrivileges{Role: role, Schema: schema, Kind: kind, ACL: acl})
}

// DefaultPrivileges is one entry of ALTER DEFAULT PRIVILEGES: the ACL
// that objects of Kind Role creates (in Schema; "" for every schema)
// start with. An entry for every schema replaces the built-in default;
// one for a schema adds to it.
type DefaultPrivileges struct {
	Role   string
	Schema string `json:",omitempty"`
	Kind   ObjectKind
	ACL    ACL
}

// DefaultPrivilegesList returns every entry of default privileges in
// database.
func (db *DB) DefaultPrivilegesList(database string) ([]DefaultPrivileges, error) {
	prefix := append(append([]byte(nil), defACLPrefix...), database+"\x00"...)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, ioErrorf(err, "reading default privileges")
	}
	defer it.Close()
	var out []DefaultPrivileges
	for it.First(); it.Valid(); it.Next() {
		var d DefaultPrivileges
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return nil, corruptionf("default privileges %q: %v", it.Key(), err)
		}
		out = append(out, d)
	}
	return out, it.Error()
}

// SetDefaultPrivileges stores d; an entry whose ACL is nil is removed.
func (db *DB) SetDefaultPrivileges(database string, d DefaultPrivileges) error {
	k := defACLKey(database, d.Role, d.Schema, d.Kind)
	if d.ACL == nil {
		if err := db.syncDelete(k); err != nil {
			return ioErrorf(err, "writing default privileges")
		}
		return nil
	}
	return db.putJSON(k, d)
}

// Memberships returns every grant of role membership.
func (db *DB) Memberships() ([]Membership, error) {
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: memberPrefix, UpperBound: prefixEnd(memberPrefix)})
	if err != nil {
		return nil, ioErrorf(err, "reading role memberships")
	}
	defer it.Close()
	var out []Membership
	for it.First(); it.Valid(); it.Next() {
		var m Membership
		if err := json.Unmarshal(it.Value(), &m); err != nil {
			return nil, corruptionf("role membership %q: %v", it.Key(), err)
		}
		out = append(out, m)
	}
	return out, it.Error()
}

// GrantMembership makes m.Member a member of m.Role (the admin option
// added if m.Admin), after checking that both roles exist and that the
// grant makes no cycle. It reports false when there was nothing to add.
func (db *DB) GrantMembership(m Membership) (bool, error) {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	defer db.rolesChanged()
	for _, n := range []string{m.Role, m.Member} {
		if _, err := db.Role(n); err != nil {
			return false, err
		}
	}
	a, err := db.Auth()
	if err != nil {
		return false, err
	}
	if m.Role == m.Member || slices.Contains(a.rolesOf(m.Role, false), m.Member) {
		return false, pgerror.Newf(pgerror.InvalidGrantOperation, "role \"%s\" is a member of role \"%s\"", m.Role, m.Member)
	}
	var old Membership
	ok, err := db.getJSON(memberKey(m.Role, m.Member), &old)
	if err != nil {
		return false, err
	}
	if ok {
		if old.Admin || !m.Admin {
			return false, nil
		}
		old.Admin = true
		m = old
	}
	return true, db.putJSON(memberKey(m.Role, m.Member), m)
}

// RevokeMembership removes member from role, or with adminOnly only its
// admin option. It reports false when member was not a member.
func (db *DB) RevokeMembership(role, member string, adminOnly bool) (bool, error) {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	defer db.rolesChanged()
	var m Membership
	ok, err := db.getJSON(memberKey(role, member), &m)
	if err != nil || !ok {
		return false, err
	}
	if adminOnly {
		m.Admin = false
		return true, db.putJSON(memberKey(role, member), m)
	}
	if err := db.syncDelete(memberKey(role, member)); err != nil {
		return false, ioErrorf(err, "revoking role membership")
	}
	return true, nil
}

// roleDependents describes what still refers to role: tables it owns or
// holds privileges on, for DROP ROLE's refusal.
func (db *DB) roleDependents(role string) []string {
	var out []string
	for _, d := range db.Databases() {
		in := ""
		if d.OID != PostgresOID {
			in = " in database " + d.Name
		}
		if d.Owner == role {
			out = append(out, "owner of database "+d.Name)
		}
		for _, t := range db.Catalog(d.OID).Tables() {
			if t.Owner == role {
				out = append(out, "owner of table "+t.Name+in)
			}
			if aclMentions(t.ACL, role) {
				out = append(out, "privileges for table "+t.Name+in)
			}
			for i, c := range t.Columns {
				if aclMentions(c.SeqACL, role) {
					out = append(out, "privileges for sequence "+t.Name+"_"+t.Columns[i].Name+"_seq"+in)
				}
			}
		}
		key := ACLDatabase(d.OID)
		if acl, err := db.SchemaACL(key, "public"); err == nil && aclMentions(acl, role) {
			out = append(out, "privileges for schema public"+in)
		}
		if ds, err := db.DefaultPrivilegesList(key); err == nil {
			for _, dp := range ds {
				if dp.Role == role || aclMentions(dp.ACL, role) {
					out = append(out, "privileges for default privileges on new relations belonging to role "+dp.Role+in)
				}
			}
		}
	}
	return out
}

func aclMentions(acl ACL, role string) bool {
	for _, it := range acl {
		if it.Grantee == role || it.Grantor == role {
			return true
		}
	}
	return false
}

// dropMemberships removes every membership of role, as member or as
// the role granted.
func (db *DB) dropMemberships(b *pebble.Batch, role string) error {
	ms, err := db.Memberships()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Role == role || m.Member == role {
			if err := b.Delete(memberKey(m.Role, m.Member), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (db *DB) getJSON(k []byte, v any) (bool, error) {
	data, closer, err := db.kv.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, ioErrorf(err, "reading %q", k)
	}
	defer closer.Close()
	if err := json.Unmarshal(data, v); err != nil {
		return false, corruptionf("%q: %v", k, err)
	}
	return true, nil
}

func (db *DB) putJSON(k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return assertf("encoding %q: %v", k, err)
	}
	if err := db.syncSet(k, data); err != nil {
		return ioErrorf(err, "writing %q", k)
	}
	return nil
}

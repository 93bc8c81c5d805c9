package session

import (
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/planner"
	"github.com/deeplaked/deeplaked/storage"
)

// Privileges are decided here, once per statement, before it runs: the
// statement's bound plan says which tables it reads, writes and whose
// sequences it advances (needs), and the current role must hold those
// privileges through its own grants, the roles whose privileges it
// inherits, or PUBLIC. Under trust authentication (Engine.AuthEnabled
// false) the session user is a superuser and nothing is checked until it
// changes role with SET ROLE.

// need is a privilege a statement needs on a table (col < 0) or on the
// sequence of its serial column col.
type need struct {
	table *storage.TableDesc
	col   int
	privs storage.Privilege
}

// needs collects what a plan needs.
type needs struct {
	list []need
	// lock is added to what each table read needs (UPDATE for SELECT
	// ... FOR UPDATE), outside subqueries in expressions.
	lock storage.Privilege
	// seqs are the sequences the statement takes values of.
	seqs []plan.SeqRef
	err  error
}

func (ns *needs) add(t *storage.TableDesc, col int, p storage.Privilege) {
	for i := range ns.list {
		if n := &ns.list[i]; n.table.ID == t.ID && n.col == col {
			n.privs |= p
			return
		}
	}
	ns.list = append(ns.list, need{table: t, col: col, privs: p})
}

// node adds what plan node n needs: SELECT on every table it reads,
// through joins, subqueries, set operations and vector searches, and what
// INSERT, UPDATE and DELETE write.
func (ns *needs) node(n plan.Node) error {
	switch n := n.(type) {
	case nil:
	case *plan.Scan:
		ns.add(n.Table, -1, storage.PrivSelect|ns.lock)
		ns.expr(n.Filter)
	case *plan.SysScan, *plan.WorkTable:
		// The catalog is readable by all, as in PostgreSQL.
	case *plan.Values:
		for _, row := range n.Rows {
			ns.exprs(row)
		}
	case *plan.History:
		ns.add(n.Table, -1, storage.PrivSelect)
		if n.B != nil {
			ns.add(n.B, -1, storage.PrivSelect)
		}
	case *plan.Series:
		ns.expr(n.Start)
		ns.expr(n.Stop)
		ns.expr(n.Step)
	case *plan.Join:
		ns.expr(n.On)
		ns.exprs(n.LeftKeys)
		ns.exprs(n.RightKeys)
		return ns.nodes(n.Left, n.Right)
	case *plan.LateralJoin:
		ns.expr(n.On)
		ns.exprs(n.Args)
		return ns.nodes(n.Left, n.Right)
	case *plan.ProjectSet:
		for _, f := range n.SRFs {
			ns.expr(f.Arg)
		}
		return ns.node(n.Input)
	case *plan.RecursiveUnion:
		return ns.nodes(n.Base, n.Recursive)
	case *plan.Materialize:
		return ns.node(n.Input)
	case *plan.SetOp:
		return ns.nodes(n.Left, n.Right)
	case *plan.Append:
		return ns.nodes(n.Inputs...)
	case *plan.Filter:
		ns.expr(n.Pred)
		return ns.node(n.Input)
	case *plan.Project:
		ns.exprs(n.Exprs)
		return ns.node(n.Input)
	case *plan.Aggregate:
		ns.exprs(n.GroupBy)
		for _, a := range n.Aggs {
			ns.expr(a.Arg)
		}
		return ns.node(n.Input)
	case *plan.Window:
		return ns.node(n.Input)
	case *plan.Sort:
		if n.TopK != nil {
			ns.expr(n.TopK.Count)
			ns.expr(n.TopK.Offset)
		}
		return ns.node(n.Input)
	case *plan.PartitionTopK:
		return ns.node(n.Input)
	case *plan.Limit:
		ns.expr(n.Count)
		ns.expr(n.Offset)
		return ns.node(n.Input)
	case *plan.VectorTopK:
		ns.expr(n.Query)
		ns.expr(n.Count)
		ns.expr(n.Offset)
		for _, s := range []*plan.Scan{n.Scan, n.Search, n.FilterScan} {
			if s != nil {
				if err := ns.node(s); err != nil {
					return err
				}
			}
		}
	case *plan.Insert:
		ns.add(n.Table, -1, storage.PrivInsert)
		if len(n.Returning) > 0 {
			ns.add(n.Table, -1, storage.PrivSelect)
		}
		ns.exprs(n.Returning)
		return ns.node(n.Input)
	case *plan.Update:
		ns.add(n.Table, -1, storage.PrivUpdate)
		// Reading the rows' values (WHERE, SET x = x + 1, RETURNING)
		// needs SELECT as well, as in PostgreSQL.
		reads := n.Where != nil || len(n.Returning) > 0
		for i, e := range n.Set {
			if r, ok := e.(*plan.ColRef); ok && r.Idx == i {
				continue
			}
			planner.Walk(e, func(x plan.Expr) {
				if _, ok := x.(*plan.ColRef); ok {
					reads = true
				}
			})
		}
		if reads {
			ns.add(n.Table, -1, storage.PrivSelect)
		}
		ns.expr(n.Where)
		ns.exprs(n.Set)
		ns.exprs(n.Returning)
	case *plan.Delete:
		ns.add(n.Table, -1, storage.PrivDelete)
		if n.Where != nil || len(n.Returning) > 0 {
			ns.add(n.Table, -1, storage.PrivSelect)
		}
		ns.expr(n.Where)
		ns.exprs(n.Returning)
	case *plan.CopyTo:
		return ns.node(n.Query)
	case *plan.CopyFrom:
		ns.add(n.Table, -1, storage.PrivInsert)
		ns.exprs(n.Defaults)
	default:
		// A node this walk does not know could read a table unchecked.
		return pgerror.AssertionFailedf("privileges of plan node %T are not known", n)
	}
	return nil
}

func (ns *needs) nodes(list ...plan.Node) error {
	for _, n := range list {
		if err := ns.node(n); err != nil {
			return err
		}
	}
	return nil
}

// expr adds what the subqueries in e need and USAGE on the sequences
// whose next value e takes (a serial column's default).
func (ns *needs) expr(e plan.Expr) {
	planner.Walk(e, func(x plan.Expr) {
		switch x := x.(type) {
		case *plan.Subquery:
			// Walk does not enter the subquery's plan.
			lock := ns.lock
			ns.lock = 0
			if err := ns.node(x.Plan); err != nil && ns.err == nil {
				ns.err = err
			}
			ns.lock = lock
		case *plan.Call:
			if x.Op == plan.OpNextVal {
				ns.seqs = append(ns.seqs, x.Seq)
			}
		}
	})
}

func (ns *needs) exprs(es []plan.Expr) {
	for _, e := range es {
		ns.expr(e)
	}
}

// currentRole is the role privileges are checked for: the one SET ROLE
// chose, or the session user.
func (s *Session) currentRole() string {
	if r := s.settings.cur["role"]; r != "" && r != "none" {
		return r
	}
	return s.User
}

// trusted reports whether privileges need no check: under trust
// authentication the session user is a superuser.
func (s *Session) trusted() bool { return !s.eng.AuthEnabled && s.currentRole() == s.User }

// auth returns the roles as this session's privileges are decided: the
// stored ones, and under trust authentication the session user as a
// superuser.
func (s *Session) auth() (*storage.Auth, error) {
	a, err := s.eng.db.Auth()
	if err != nil {
		return nil, err
	}
	if !s.eng.AuthEnabled {
		a = a.WithSuperuser(s.User)
	}
	return a, nil
}

// aclDatabase is the database whose schema ACLs and default privileges
// apply.
func (s *Session) aclDatabase() string { return storage.ACLDatabase(s.dbOID) }

// authorize checks that the current role holds what plan n needs, as
// PostgreSQL's ExecCheckPermissions does when a statement starts: 42501
// "permission denied for table t" otherwise.
func (s *Session) authorize(n plan.Node) error {
	return s.authorizeLocking(n, false)
}

// authorizeLocking is authorize, for a SELECT ... FOR UPDATE/SHARE when
// locking: its tables need UPDATE too.
func (s *Session) authorizeLocking(n plan.Node, locking bool) error {
	if s.trusted() {
		return nil
	}
	var ns needs
	if locking {
		ns.lock = storage.PrivUpdate
	}
	if err := ns.node(n); err != nil {
		return err
	}
	if ns.err != nil {
		return ns.err
	}
	return s.check(&ns)
}

// authorizeTables checks privs on each of tables.
func (s *Session) authorizeTables(privs storage.Privilege, tables ...*storage.TableDesc) error {
	if s.trusted() {
		return nil
	}
	var ns needs
	for _, t := range tables {
		ns.add(t, -1, privs)
	}
	return s.check(&ns)
}

func (s *Session) check(ns *needs) error {
	for _, sq := range ns.seqs {
		t := s.tableByID(ns, sq.TableID)
		if t != nil {
			ns.add(t, sq.Col, storage.PrivUsage)
		}
	}
	if len(ns.list) == 0 {
		return nil
	}
	a, err := s.auth()
	if err != nil {
		return err
	}
	role := s.currentRole()
	if a.Superuser(role) {
		return nil
	}
	if err := s.schemaPrivilege(a, role, storage.PrivUsage); err != nil {
		return err
	}
	for _, n := range ns.list {
		owner := a.Owner(n.table)
		if n.col < 0 {
			if p, _ := a.Mask(storage.ObjectTable, n.table.ACL, owner, role); n.privs&^p != 0 {
				return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied for table %s", n.table.Name)
			}
			continue
		}
		// nextval needs USAGE or UPDATE on the sequence.
		p, _ := a.Mask(storage.ObjectSequence, n.table.Columns[n.col].SeqACL, owner, role)
		if p&(storage.PrivUsage|storage.PrivUpdate) == 0 {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied for sequence %s", sequenceName(n.table, n.col))
		}
	}
	return nil
}

// tableByID finds the table id among those a statement needs, or in the
// catalog.
func (s *Session) tableByID(ns *needs, id uint64) *storage.TableDesc {
	for _, n := range ns.list {
		if n.table.ID == id {
			return n.table
		}
	}
	for _, t := range s.cat.Tables() {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func sequenceName(t *storage.TableDesc, col int) string {
	return t.Name + "_" + t.Columns[col].Name + "_seq"
}

// schemaPrivilege checks that role holds p on schema public: 42501
// "permission denied for schema public" otherwise.
func (s *Session) schemaPrivilege(a *storage.Auth, role string, p storage.Privilege) error {
	acl, err := s.eng.db.SchemaACL(s.aclDatabase(), "public")
	if err != nil {
		return err
	}
	if have, _ := a.Mask(storage.ObjectSchema, acl, storage.PublicSchemaOwner, role); p&^have != 0 {
		return pgerror.New(pgerror.InsufficientPrivilege, "permission denied for schema public")
	}
	return nil
}

// requireOwner checks that the current role owns each table (has the
// privileges of its owner) or is a superuser, as ALTER, DROP, CREATE
// INDEX and REINDEX need: 42501 "must be owner of table t" otherwise.
func (s *Session) requireOwner(tables ...*storage.TableDesc) error {
	if s.trusted() {
		return nil
	}
	a, err := s.auth()
	if err != nil {
		return err
	}
	role := s.currentRole()
	for _, t := range tables {
		if !a.HasPrivsOf(role, a.Owner(t)) {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must be owner of table %s", t.Name)
		}
	}
	return nil
}

// ownsTable reports whether the current role may vacuum t.
func (s *Session) ownsTable(a *storage.Auth, t *storage.TableDesc) bool {
	return s.trusted() || a.HasPrivsOf(s.currentRole(), a.Owner(t))
}

// newTable sets the owner of a table the current role creates and the
// ACLs its default privileges give the table and its sequences, after
// checking that the role may create in schema public.
func (s *Session) newTable(desc *storage.TableDesc) error {
	role := s.currentRole()
	if !s.trusted() {
		a, err := s.auth()
		if err != nil {
			return err
		}
		if !a.Superuser(role) {
			if err := s.schemaPrivilege(a, role, storage.PrivCreate); err != nil {
				return err
			}
		}
	}
	desc.Owner = role
	defs, err := s.eng.db.DefaultPrivilegesList(s.aclDatabase())
	if err != nil {
		return err
	}
	desc.ACL = defaultACL(defs, storage.ObjectTable, role)
	for i := range desc.Columns {
		if desc.Columns[i].Serial {
			desc.Columns[i].SeqACL = defaultACL(defs, storage.ObjectSequence, role)
		}
	}
	return nil
}

// defaultACL is PostgreSQL's get_user_default_acl: the ACL a new object of
// kind that owner makes in schema public starts with; nil when that is
// the built-in default.
func defaultACL(defs []storage.DefaultPrivileges, kind storage.ObjectKind, owner string) storage.ACL {
	var global, schema storage.ACL
	found := false
	for _, d := range defs {
		if d.Role != owner || d.Kind != kind {
			continue
		}
		switch d.Schema {
		case "":
			global, found = d.ACL, true
		case "public":
			schema, found = d.ACL, true
		}
	}
	if !found {
		return nil
	}
	def := storage.DefaultACL(kind, owner)
	acl := global
	if acl == nil {
		acl = def.Clone()
	}
	acl = mergeACL(acl.Clone(), schema)
	if sameACL(acl, def) {
		return nil
	}
	return acl
}

// mergeACL adds the items of b to a, merging those of one grantee and
// grantor.
func mergeACL(a, b storage.ACL) storage.ACL {
	for _, it := range b {
		i := slices.IndexFunc(a, func(x storage.ACLItem) bool { return x.Grantee == it.Grantee && x.Grantor == it.Grantor })
		if i < 0 {
			a = append(a, it)
			continue
		}
		a[i].Privs |= it.Privs
		a[i].Grant |= it.Grant
	}
	return a
}

// sameACL reports whether two ACLs hold the same items in any order.
func sameACL(a, b storage.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for _, it := range a {
		if !slices.Contains(b, it) {
			return false
		}
	}
	return true
}

package session

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/deeplaked/deeplaked/exec"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/planner"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Engine creates sessions over the databases of one storage.DB.
type Engine struct {
	db     *storage.DB
	logger *slog.Logger
	// AuthEnabled restricts role statements to superusers; set it before
	// the first session when clients authenticate with passwords.
	AuthEnabled bool
	// serverSettings holds the values of server-wide parameters, by
	// lower-case name (SetServerSetting).
	serverSettings map[string]string
	// CreateDatabases makes Connect create a database that does not
	// exist rather than refuse the connection (trust authentication on a
	// loopback listener).
	CreateDatabases bool
	// DropWait is how long DROP DATABASE waits for the database's other
	// sessions to end; 0 means DefaultDropWait.
	DropWait time.Duration
	// conns tracks the sessions of each database.
	conns connections
	// mem is the server's memory accountant (SetMemoryLimit); memLimit
	// the limit memory_limit shows.
	mem      *exec.MemMonitor
	memLimit int64
}

// SetMemoryLimit sets the server's memory limit, before the first session:
// a quarter of it bounds what query operators hold, all sessions together
// (the rest is for storage caches, connection buffers, copies of values
// in flight, and the garbage of growing buffers the Go runtime has yet to
// collect); beyond it a query fails with 53200.
func (e *Engine) SetMemoryLimit(limit int64) {
	e.memLimit = limit
	e.mem = exec.NewMemMonitor("server", limit/4)
}

// freeingMemory is set while a session returns freed memory to the
// system (freeMemory).
var freeingMemory atomic.Bool

// freeMemory returns the memory a statement freed to the system when it
// held much (64 MB or more), so that the server's resident size drops
// back after a large query rather than when the runtime gets to it.
func (s *Session) freeMemory() {
	if s.mem.TakePeak() < 64<<20 || !freeingMemory.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer freeingMemory.Store(false)
		debug.FreeOSMemory()
	}()
}

// NewEngine returns an engine serving db.
func NewEngine(db *storage.DB, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.Default()
	}
	return &Engine{db: db, logger: logger}
}

// Session is the state of one client connection: settings and the open
// transaction. It is used by one goroutine at a time.
type Session struct {
	eng      *Engine
	User     string
	Database string
	// dbOID is the OID of the session's database, cat its tables: what
	// statements bind against.
	dbOID    uint32
	cat      *storage.Catalog
	settings settings
	// terminate ends the session's connection (OnTerminate), under
	// eng.conns.mu.
	terminate func()
	// stmtTime is when the running statement began (statement_timestamp),
	// txnTime when its transaction's first statement did (now()).
	stmtTime, txnTime time.Time

	txn      *storage.Txn
	explicit bool // inside BEGIN ... COMMIT
	failed   bool // an error occurred inside the explicit transaction
	// multi is set while a query string of several statements runs: an
	// implicit transaction block, as PostgreSQL sees it.
	multi bool

	// stmts and portals are the extended protocol's prepared statements
	// and portals, by name.
	stmts   map[string]*Prepared
	portals map[string]*Portal
	// params are the parameter values of the statement running from a
	// portal, nil otherwise.
	params *sql.Params
	// codec decodes binary parameter values.
	codec types.BinaryCodec
	// mem is the session's memory monitor, a child of the server's.
	mem *exec.MemMonitor
	// lastEnv is the Env of the last DML statement (stmtEnv).
	lastEnv *exec.Env
}

// TxStatus returns the ReadyForQuery status byte.
func (s *Session) TxStatus() byte {
	switch {
	case s.explicit && s.failed:
		return TxFailed
	case s.explicit:
		return TxActive
	}
	return TxIdle
}

// Close rolls back any open transaction, gives back the memory its
// operators still hold and leaves the database.
func (s *Session) Close() {
	defer s.mem.Stop()
	s.lastEnv.Close()
	if s.txn != nil {
		s.txn.Rollback()
		s.txn = nil
	}
	s.explicit, s.failed = false, false
	s.eng.conns.remove(s.dbOID, s)
}

// ExecSimple runs the statements of one simple-protocol query string. As in
// PostgreSQL, statements outside an explicit transaction block form one
// implicit transaction that commits at the end of the string; the first
// error stops the string and is returned.
func (s *Session) ExecSimple(ctx context.Context, query string, w ResultWriter) error {
	stmts, err := s.parse(query)
	if err != nil {
		s.abort()
		return err
	}
	if len(stmts) == 0 {
		return w.WriteEmpty()
	}
	s.multi = len(stmts) > 1
	defer func() { _ = s.reportSettings(w) }()
	defer s.freeMemory()
	for _, p := range stmts {
		sctx, cancel := s.statementContext(ctx)
		err := statementError(sctx, s.execOne(sctx, p, w))
		cancel()
		if err != nil {
			s.abort()
			return err
		}
	}
	if !s.explicit {
		txn := s.txn
		s.txn = nil
		if txn != nil {
			if err := txn.Commit(); err != nil {
				s.endSettings(false)
				return err
			}
		}
		s.endSettings(true)
	}
	return nil
}

// Abort is abort, for the wire layer after a recovered panic.
func (s *Session) Abort() { s.abort() }

// abort ends the implicit transaction or marks the explicit one failed.
func (s *Session) abort() {
	if s.explicit {
		s.failed = true
		return
	}
	if s.txn != nil {
		s.txn.Rollback()
		s.txn = nil
	}
	s.endSettings(false)
}

func (s *Session) ensureTxn() *storage.Txn {
	if s.txn == nil {
		s.txn = s.eng.db.Begin()
		s.txnTime = s.stmtTime
	}
	return s.txn
}

func (s *Session) execOne(ctx context.Context, p sql.Parsed, w ResultWriter) error {
	if tx, ok := p.Stmt.(*sql.TxStmt); ok {
		return s.execTx(tx, w)
	}
	if s.explicit && s.failed {
		return pgerror.New(pgerror.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")
	}
	db := s.cat
	switch st := p.Stmt.(type) {
	case *sql.CreateTable:
		if _, err := s.createTable(st, w); err != nil {
			return err
		}
		return w.WriteComplete("CREATE TABLE")
	case *sql.CreateTableAs:
		return s.createTableAs(ctx, st, w)
	case *sql.CreateView:
		return s.createView(st, w)
	case *sql.DropTable:
		// Every table is checked before any is dropped.
		for _, name := range st.Names {
			if t, err := db.Table(name); err == nil {
				if err := checkDropKind(t, st.View); err != nil {
					return err
				}
				if err := s.requireOwner(t); err != nil {
					return err
				}
			}
		}
		for _, name := range st.Names {
			dropped, err := db.DropTable(name, st.IfExists)
			if err != nil {
				return err
			}
			if !dropped {
				what := "table"
				if st.View {
					what = "view"
				}
				if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "%s \"%s\" does not exist, skipping", what, name); err != nil {
					return err
				}
			}
		}
		if st.View {
			return w.WriteComplete("DROP VIEW")
		}
		return w.WriteComplete("DROP TABLE")
	case *sql.SetVar:
		if st.Name == "role" {
			if err := s.checkSetRole(st); err != nil {
				return err
			}
			if err := s.execSet(st, w); err != nil {
				return err
			}
			// is_superuser is the current role's, reported to the
			// client (and undone with a SET LOCAL ROLE).
			return s.setIsSuperuser(st.Local)
		}
		return s.execSet(st, w)
	case *sql.SetSnapshot:
		if !s.explicit {
			return pgerror.New(pgerror.NoActiveSQLTransaction, "SET TRANSACTION SNAPSHOT can only be used in transaction blocks")
		}
		if err := s.ensureTxn().ImportSnapshot(st.ID); err != nil {
			return err
		}
		return w.WriteComplete("SET")
	case *sql.ShowVar:
		return s.execShow(st, w)
	case *sql.Discard:
		return s.execDiscard(st, w)
	case *sql.Select:
		node, err := sql.BindSelect(s.catalog(), st)
		if err != nil {
			return err
		}
		if err := s.authorizeLocking(node, st.Locking); err != nil {
			return err
		}
		return s.runQuery(ctx, s.plan(node), w)
	case *sql.Insert:
		n, res, err := s.insert(ctx, st)
		if err != nil {
			return err
		}
		return s.writeDML(w, "INSERT 0", n.Columns(), res)
	case *sql.Update:
		n, err := sql.BindUpdate(s.catalog(), st)
		if err != nil {
			return err
		}
		if err := s.authorize(n); err != nil {
			return err
		}
		res, err := exec.RunUpdate(s.stmtEnv(ctx), n)
		if err != nil {
			return err
		}
		return s.writeDML(w, "UPDATE", n.Columns(), res)
	case *sql.Delete:
		n, err := sql.BindDelete(s.catalog(), st)
		if err != nil {
			return err
		}
		if err := s.authorize(n); err != nil {
			return err
		}
		res, err := exec.RunDelete(s.stmtEnv(ctx), n)
		if err != nil {
			return err
		}
		return s.writeDML(w, "DELETE", n.Columns(), res)
	case *sql.Truncate:
		// TRUNCATE as PostgreSQL's: every table's rows go, in the
		// statement's transaction (a rollback brings them back); the
		// names are checked before any row is deleted.
		dels := make([]*plan.Delete, len(st.Tables))
		for i, name := range st.Tables {
			n, err := sql.BindDelete(s.catalog(), &sql.Delete{Table: name})
			if err != nil {
				return err
			}
			dels[i] = n
			if err := s.authorizeTables(storage.PrivTruncate, n.Table); err != nil {
				return err
			}
		}
		for _, n := range dels {
			if _, err := exec.RunDelete(s.stmtEnv(ctx), n); err != nil {
				return err
			}
		}
		return w.WriteComplete("TRUNCATE TABLE")
	case *sql.Copy:
		return s.copyFrom(ctx, st, w)
	case *sql.CopyTo:
		return s.copyTo(ctx, st, w)
	case *sql.Vacuum:
		return s.vacuum(ctx, st, w)
	case *sql.DeclareCursor, *sql.Fetch, *sql.CloseCursor, *sql.Deallocate:
		return s.execCursorStmt(ctx, st, w)
	case *sql.CreateRole, *sql.AlterRole, *sql.DropRole:
		return s.execRole(st, w)
	case *sql.Grant:
		return s.execGrant(st, w)
	case *sql.GrantRole:
		return s.execGrantRole(st, w)
	case *sql.AlterDefaultPrivileges:
		return s.execAlterDefaultPrivileges(st, w)
	case *sql.AlterTableOwner:
		return s.execAlterTableOwner(st, w)
	case *sql.CreateDatabase, *sql.DropDatabase, *sql.AlterDatabase:
		return s.execDatabase(st, w)
	case *sql.Explain:
		return s.execExplain(ctx, st, s.catalog(), w)
	case *sql.CreateIndex:
		if t, err := db.Table(st.Table); err == nil {
			if err := s.requireOwner(t); err != nil {
				return err
			}
		}
		name, ix, err := sql.BindCreateIndex(db, st)
		if err != nil {
			return err
		}
		created, err := db.CreateIndex(ctx, st.Table, ix, st.IfNotExists)
		if err != nil {
			return err
		}
		if !created {
			if err := s.notice(w, severityNotice, pgerror.DuplicateTable, "relation \"%s\" already exists, skipping", name); err != nil {
				return err
			}
		}
		return w.WriteComplete("CREATE INDEX")
	case *sql.DropIndex:
		for _, name := range st.Names {
			if t := db.IndexTable(name); t != nil {
				if err := s.requireOwner(t); err != nil {
					return err
				}
			}
		}
		for _, name := range st.Names {
			dropped, err := db.DropIndex(name, st.IfExists)
			if err != nil {
				return err
			}
			if !dropped {
				if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "index \"%s\" does not exist, skipping", name); err != nil {
					return err
				}
			}
		}
		return w.WriteComplete("DROP INDEX")
	case *sql.Reindex:
		t := db.IndexTable(st.Name)
		if st.Table {
			t, _ = db.Table(st.Name)
		}
		if t != nil {
			if err := s.requireOwner(t); err != nil {
				return err
			}
		}
		if err := db.Reindex(ctx, st.Name, st.Table); err != nil {
			return err
		}
		return w.WriteComplete("REINDEX")
	case *sql.CreateExtension:
		if _, ok := plan.FindExtension(st.Name); !ok {
			return pgerror.Newf(pgerror.FeatureNotSupported, "extension \"%s\" is not available", st.Name).
				WithHint("deeplaked has no loadable extensions; it provides pgvector's vector built in.")
		}
		// Built in, so always there: CREATE EXTENSION vector succeeds as
		// it does on a database that did not have it yet.
		return w.WriteComplete("CREATE EXTENSION")
	case *sql.DropExtension:
		for _, name := range st.Names {
			if _, ok := plan.FindExtension(name); !ok {
				if !st.IfExists {
					return pgerror.Newf(pgerror.UndefinedObject, "extension \"%s\" does not exist", name)
				}
				if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "extension \"%s\" does not exist, skipping", name); err != nil {
					return err
				}
				continue
			}
			if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "extension \"%s\" is built into deeplaked and stays", name); err != nil {
				return err
			}
		}
		return w.WriteComplete("DROP EXTENSION")
	}
	return pgerror.AssertionFailedf("unhandled statement %T", p.Stmt)
}

// createTable binds and creates the table st describes and returns its
// descriptor (its id set); with IF NOT EXISTS, a table of that name is a
// notice and the descriptor nil.
func (s *Session) createTable(st *sql.CreateTable, w ResultWriter) (*storage.TableDesc, error) {
	desc, err := sql.BindCreateTable(s.catalog(), st)
	if err != nil {
		return nil, err
	}
	if err := s.newTable(desc); err != nil {
		return nil, err
	}
	created, err := s.cat.CreateTable(desc, st.IfNotExists)
	if err != nil || created {
		return desc, err
	}
	return nil, s.notice(w, severityNotice, pgerror.DuplicateTable, "relation \"%s\" already exists, skipping", st.Name)
}

// createView runs CREATE [OR REPLACE] VIEW: the query is bound now (its
// tables must exist, and the role read them), and the view keeps its text
// and its result's columns. OR REPLACE keeps the view's columns as they
// were, in name and type, and may add columns after them, as PostgreSQL.
func (s *Session) createView(st *sql.CreateView, w ResultWriter) error {
	q, err := sql.BindSelect(s.catalog(), st.Query)
	if err != nil {
		return err
	}
	if err := s.authorize(q); err != nil {
		return err
	}
	cols := q.Columns()
	if len(st.Columns) > len(cols) {
		return pgerror.New(pgerror.SyntaxError, "CREATE VIEW specifies more column names than columns")
	}
	desc := &storage.TableDesc{Name: st.Name, View: st.SQL}
	for i, c := range cols {
		name := c.Name
		if i < len(st.Columns) {
			name = st.Columns[i]
		}
		desc.Columns = append(desc.Columns, storage.ColumnDesc{Name: name, Type: c.Type})
	}
	if st.Replace {
		if old, err := s.cat.Table(st.Name); err == nil {
			if old.View == "" {
				return pgerror.Newf(pgerror.WrongObjectType, "%q is not a view", st.Name)
			}
			if err := s.requireOwner(old); err != nil {
				return err
			}
			if len(desc.Columns) < len(old.Columns) {
				return pgerror.New(pgerror.InvalidTableDefinition, "cannot drop columns from view")
			}
			for i, c := range old.Columns {
				if n := desc.Columns[i]; n.Name != c.Name || !n.Type.Equal(c.Type) {
					return pgerror.Newf(pgerror.InvalidTableDefinition, "cannot change name or data type of view column %q", c.Name)
				}
			}
			if err := s.cat.AlterTable(st.Name, old.ID, func(d *storage.TableDesc) error {
				d.View, d.Columns = desc.View, desc.Columns
				return nil
			}); err != nil {
				return err
			}
			return w.WriteComplete("CREATE VIEW")
		}
	}
	if err := s.newTable(desc); err != nil {
		return err
	}
	if _, err := s.cat.CreateTable(desc, false); err != nil {
		return err
	}
	return w.WriteComplete("CREATE VIEW")
}

// checkDropKind returns 42809 for DROP TABLE of a view or DROP VIEW of a
// table.
func checkDropKind(t *storage.TableDesc, view bool) error {
	switch {
	case view && t.View == "":
		return pgerror.Newf(pgerror.WrongObjectType, "%q is not a view", t.Name).WithHint("Use DROP TABLE to remove a table.")
	case !view && t.View != "":
		return pgerror.Newf(pgerror.WrongObjectType, "%q is not a table", t.Name).WithHint("Use DROP VIEW to remove a view.")
	}
	return nil
}

// createTableAs runs CREATE TABLE ... AS and SELECT ... INTO: a table with
// the query's columns (names, types; no keys, defaults or constraints, as
// in PostgreSQL), then, unless WITH NO DATA, an INSERT of the query's
// rows in the statement's transaction. As CREATE TABLE, the table is made
// at once; unlike it, it is dropped again if the transaction does not
// commit.
func (s *Session) createTableAs(ctx context.Context, st *sql.CreateTableAs, w ResultWriter) error {
	db := s.cat
	q, err := sql.BindSelect(s.catalog(), st.Query)
	if err != nil {
		return err
	}
	if err := s.authorize(q); err != nil {
		return err
	}
	cols := q.Columns()
	if len(st.Columns) > len(cols) {
		return pgerror.New(pgerror.SyntaxError, "too many column names were specified")
	}
	ct := &sql.CreateTable{Name: st.Name, IfNotExists: st.IfNotExists, Options: st.Options}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
		if i < len(st.Columns) {
			names[i] = st.Columns[i]
		}
		ct.Columns = append(ct.Columns, sql.ColumnDef{Name: names[i], Type: sql.StoredType(c.Type)})
	}
	desc, err := s.createTable(ct, w)
	if err != nil {
		return err
	}
	if desc == nil {
		return w.WriteComplete("CREATE TABLE AS")
	}
	// The table is made at once; if the transaction does not commit (the
	// query fails, ROLLBACK, the client goes), it is dropped again: this
	// table, not one made under its name since.
	name, id, log := st.Name, desc.ID, s.eng.logger
	s.ensureTxn().OnAbort(func() {
		if _, err := db.DropTableID(name, id); err != nil {
			log.Warn("session: dropping the table of a CREATE TABLE AS that did not commit", "table", name, "err", err)
		}
	})
	if st.NoData {
		return w.WriteComplete("CREATE TABLE AS")
	}
	_, res, err := s.insert(ctx, &sql.Insert{Table: st.Name, Columns: names, Select: st.Query})
	if err != nil {
		return err
	}
	return w.WriteComplete("SELECT " + strconv.FormatInt(res.Count, 10))
}

// insert binds, plans and runs an INSERT in the statement's transaction.
func (s *Session) insert(ctx context.Context, st *sql.Insert) (*plan.Insert, *exec.DMLResult, error) {
	n, err := sql.BindInsert(s.catalog(), st)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(n); err != nil {
		return nil, nil, err
	}
	n = planner.Optimize(n).(*plan.Insert)
	res, err := exec.RunInsert(s.stmtEnv(ctx), n)
	return n, res, err
}

// copyFrom runs COPY ... FROM STDIN in the statement's transaction: a
// failure leaves none of its rows behind.
func (s *Session) copyFrom(ctx context.Context, st *sql.Copy, w ResultWriter) error {
	n, err := sql.BindCopy(s.views(), st)
	if err != nil {
		return err
	}
	if err := s.authorize(n); err != nil {
		return err
	}
	if sw, ok := w.(StatementContextSetter); ok {
		sw.SetStatementContext(ctx) // statement_timeout stops a wait for data
	}
	r, err := w.CopyIn(n.Options.Format == plan.CopyBinary, len(n.Target))
	if err != nil {
		return err
	}
	count, err := exec.RunCopyFrom(s.stmtEnv(ctx), n, r)
	if err != nil {
		return err
	}
	return w.WriteComplete("COPY " + strconv.FormatInt(count, 10))
}

// copyTo runs COPY ... TO STDOUT, streaming the rows to the client as
// the query produces them.
func (s *Session) copyTo(ctx context.Context, st *sql.CopyTo, w ResultWriter) error {
	n, err := sql.BindCopyTo(s.catalog(), st)
	if err != nil {
		return err
	}
	if err := s.authorize(n); err != nil {
		return err
	}
	n = planner.PlanCopyTo(n)
	if size := n.Options.Tensor.SharedMemory; size > 0 {
		sw, ok := w.(SharedMemoryWriter)
		if !ok {
			return pgerror.New(pgerror.FeatureNotSupported, "SHARED_MEMORY is not available for this statement")
		}
		if err := sw.ShareMemory(size); err != nil {
			return err
		}
	}
	if key := n.Options.Tensor.Epoch; key != "" {
		if err := s.ensureTxn().ReadEpoch(key); err != nil {
			return err
		}
	}
	env := s.env(ctx)
	defer env.Close()
	ct, err := exec.NewCopyTo(env, n)
	if err != nil {
		return err
	}
	defer ct.Close()
	out, err := w.CopyOut(n.Options.Format == plan.CopyBinary || n.Options.Format == plan.CopyTensor, len(n.Columns()))
	if err != nil {
		return err
	}
	count, err := ct.Run(out)
	if err != nil {
		return err
	}
	return w.WriteComplete("COPY " + strconv.FormatInt(count, 10))
}

// vacuum runs VACUUM on the named tables, or on every table. As in
// PostgreSQL it runs outside any transaction block.
func (s *Session) vacuum(ctx context.Context, st *sql.Vacuum, w ResultWriter) error {
	if s.explicit || s.multi {
		return pgerror.New(pgerror.ActiveSQLTransaction, "VACUUM cannot run inside a transaction block")
	}
	db := s.cat
	tables := make([]*storage.TableDesc, len(st.Tables))
	for i, name := range st.Tables {
		t, err := db.Table(name)
		if err != nil {
			return err
		}
		tables[i] = t
	}
	var a *storage.Auth
	if !s.trusted() {
		var err error
		if a, err = s.auth(); err != nil {
			return err
		}
	}
	if len(st.Tables) == 0 {
		if s.trusted() || a.Superuser(s.currentRole()) {
			if _, err := db.Vacuum(ctx, ""); err != nil {
				return err
			}
			return w.WriteComplete("VACUUM")
		}
		// A database-wide VACUUM by others passes over the tables they
		// do not own, as in PostgreSQL.
		for _, t := range db.Tables() {
			if s.ownsTable(a, t) {
				tables = append(tables, t)
			}
		}
	}
	for _, t := range tables {
		if len(st.Tables) > 0 && !s.ownsTable(a, t) {
			if err := s.notice(w, severityWarning, pgerror.Code("01000"), "skipping \"%s\" --- only table or database owner can vacuum it", t.Name); err != nil {
				return err
			}
			continue
		}
		if _, err := db.Vacuum(ctx, t.Name); err != nil {
			return err
		}
	}
	return w.WriteComplete("VACUUM")
}

// catalog is what statements bind against: the session's database, with
// the parameters of the portal running.
func (s *Session) catalog() sql.Catalog {
	if s.params != nil {
		return sql.WithParams(s.views(), s.params)
	}
	return s.views()
}

// stmtEnv returns an Env for a statement that runs to its end within the
// call; what it holds is given back then (at the next statement at the
// latest).
func (s *Session) stmtEnv(ctx context.Context) *exec.Env {
	s.lastEnv.Close()
	s.lastEnv = s.env(ctx)
	return s.lastEnv
}

func (s *Session) env(ctx context.Context) *exec.Env {
	return &exec.Env{Ctx: ctx, DB: s.eng.db, Catalog: s.cat, Txn: s.ensureTxn(), User: s.User, Database: s.Database, Role: s.currentRole(), Auth: s.auth, Setting: s.lookupSetting, View: s.views().Table, SetConfig: s.setConfig, Settings: s.settingRows, Now: s.txnTime, StmtNow: s.stmtTime, Mem: s.mem}
}

func (s *Session) execTx(tx *sql.TxStmt, w ResultWriter) error {
	if tx.Kind != sql.TxBegin && !s.explicit {
		if err := s.notice(w, severityWarning, pgerror.NoActiveSQLTransaction, "there is no transaction in progress"); err != nil {
			return err
		}
	}
	switch tx.Kind {
	case sql.TxBegin:
		// BEGIN inside a block is a warning in PostgreSQL; statements of
		// the same query string before BEGIN join the block.
		if s.explicit {
			if err := s.notice(w, severityWarning, pgerror.ActiveSQLTransaction, "there is already a transaction in progress"); err != nil {
				return err
			}
		}
		s.explicit = true
		if tx.Start {
			return w.WriteComplete("START TRANSACTION")
		}
		return w.WriteComplete("BEGIN")
	case sql.TxCommit:
		tag := "COMMIT"
		var err error
		if s.txn != nil {
			if s.failed {
				s.txn.Rollback()
				tag = "ROLLBACK"
			} else {
				err = s.txn.Commit()
			}
		} else if s.failed {
			tag = "ROLLBACK"
		}
		s.endSettings(tag == "COMMIT" && err == nil)
		s.txn, s.explicit, s.failed = nil, false, false
		s.dropPortals()
		if err != nil {
			return err
		}
		return w.WriteComplete(tag)
	default:
		if s.txn != nil {
			s.txn.Rollback()
		}
		s.endSettings(false)
		s.txn, s.explicit, s.failed = nil, false, false
		s.dropPortals()
		return w.WriteComplete("ROLLBACK")
	}
}

func columnsOf(cols []plan.Column) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		out[i] = Column{Name: c.Name, Type: c.Type}
		if c.TableID != 0 && c.Ordinal >= 0 {
			out[i].TableOID = tableOID(c.TableID)
			out[i].ColumnNum = int16(c.Ordinal + 1)
		}
	}
	return out
}

// tableOID is the OID clients see for a table.
func tableOID(id uint64) uint32 { return uint32(16384 + id) }

// plan returns the physical plan of query n for this session: its
// workers, its transaction's view of the tables' sizes.
func (s *Session) plan(n plan.Node) plan.Node {
	return planner.Plan(n, planner.Options{Workers: s.parallelWorkers(), TableRows: func(t *storage.TableDesc) int64 {
		rows, err := s.ensureTxn().EstimatedRows(t)
		if err != nil {
			return 0 // the estimate goes without; the query reports the error
		}
		return rows
	}})
}

func (s *Session) runQuery(ctx context.Context, node plan.Node, w ResultWriter) error {
	env := s.env(ctx)
	defer env.Close()
	op, err := exec.Build(env, node)
	if err != nil {
		return err
	}
	defer op.Close()
	if err := w.WriteColumns(columnsOf(node.Columns())); err != nil {
		return err
	}
	var n int64
	err = exec.Drain(op, func(b *types.Batch) error {
		n += int64(b.Len())
		return w.WriteBatch(b)
	})
	if err != nil {
		return err
	}
	return w.WriteComplete("SELECT " + strconv.FormatInt(n, 10))
}

func (s *Session) writeDML(w ResultWriter, verb string, cols []plan.Column, res *exec.DMLResult) error {
	if res.Returning != nil {
		if err := w.WriteColumns(columnsOf(cols)); err != nil {
			return err
		}
		if res.Returning.Len() > 0 {
			if err := w.WriteBatch(res.Returning); err != nil {
				return err
			}
		}
	}
	return w.WriteComplete(fmt.Sprintf("%s %d", verb, res.Count))
}

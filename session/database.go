package session

import (
	"github.com/deeplaked/deeplaked/exec"
	"strconv"
	"sync"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/storage"
)

// DefaultDropWait is how long DROP DATABASE and ALTER DATABASE RENAME
// wait for the other sessions of the database to end, as PostgreSQL
// waits, before they give up with 55006.
const DefaultDropWait = 5 * time.Second

// connections tracks which sessions are connected to which database, for
// DROP DATABASE, which refuses to drop a database in use (or, WITH
// (FORCE), ends its sessions first).
type connections struct {
	mu   sync.Mutex
	byDB map[uint32]map[*Session]struct{}
	// closed marks the databases being dropped or renamed: sessions may
	// not connect to them meanwhile.
	closed map[uint32]bool
	// left is closed, and replaced, whenever a session ends.
	left chan struct{}
}

func (c *connections) init() {
	if c.byDB == nil {
		c.byDB = make(map[uint32]map[*Session]struct{})
		c.closed = make(map[uint32]bool)
		c.left = make(chan struct{})
	}
}

// add registers s in database oid; false if the database is closed.
func (c *connections) add(oid uint32, s *Session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.closed[oid] {
		return false
	}
	m := c.byDB[oid]
	if m == nil {
		m = make(map[*Session]struct{})
		c.byDB[oid] = m
	}
	m[s] = struct{}{}
	return true
}

// remove forgets s, which was in database oid.
func (c *connections) remove(oid uint32, s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if _, ok := c.byDB[oid][s]; !ok {
		return
	}
	delete(c.byDB[oid], s)
	if len(c.byDB[oid]) == 0 {
		delete(c.byDB, oid)
	}
	close(c.left)
	c.left = make(chan struct{})
}

// sessions returns the sessions connected to database oid.
func (c *connections) sessions(oid uint32) []*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Session
	for s := range c.byDB[oid] {
		out = append(out, s)
	}
	return out
}

// close waits up to wait for database oid to have no session, then marks
// it closed and returns 0; otherwise it returns how many sessions are
// still connected. The caller reopens it (reopen) when done.
func (c *connections) close(oid uint32, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		c.mu.Lock()
		c.init()
		n := len(c.byDB[oid])
		if n == 0 {
			c.closed[oid] = true
			c.mu.Unlock()
			return 0
		}
		left := c.left
		c.mu.Unlock()
		d := time.Until(deadline)
		if d <= 0 {
			return n
		}
		t := time.NewTimer(d)
		select {
		case <-left:
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *connections) reopen(oid uint32) {
	c.mu.Lock()
	delete(c.closed, oid)
	c.mu.Unlock()
}

// Connect starts a session for user on database. A database that does
// not exist is FATAL 3D000, unless the engine creates missing databases
// (CreateDatabases), when it is created, owned by user.
func (e *Engine) Connect(user, database string) (*Session, error) {
	d, err := e.db.LookupDatabase(database)
	if err != nil && e.CreateDatabases && pgerror.GetCode(err) == pgerror.InvalidCatalogName {
		d, err = e.db.CreateDatabase(database, user)
		if pgerror.GetCode(err) == pgerror.DuplicateDatabase { // made meanwhile by another connection
			d, err = e.db.LookupDatabase(database)
		}
		if err == nil {
			e.logger.Info("created database on first connection", "database", database, "owner", user)
		}
	}
	if err != nil {
		return nil, err
	}
	s := &Session{eng: e, User: user, Database: d.Name, dbOID: d.OID, cat: e.db.Catalog(d.OID), settings: newSettings(user, e.serverSettings), mem: e.mem.Child("session")}
	if e.memLimit > 0 {
		s.settings.setFixed("memory_limit", exec.FormatBytes(e.memLimit))
	}
	if !e.conns.add(d.OID, s) {
		return nil, pgerror.Newf(pgerror.InvalidCatalogName, "database \"%s\" does not exist", database)
	}
	// A DROP DATABASE that counted the sessions before this one was
	// added may have dropped it meanwhile.
	if now, err := e.db.LookupDatabase(database); err != nil || now.OID != d.OID {
		e.conns.remove(d.OID, s)
		return nil, pgerror.Newf(pgerror.InvalidCatalogName, "database \"%s\" does not exist", database)
	}
	return s, nil
}

// OnTerminate sets what ends the session's connection, for DROP DATABASE
// ... WITH (FORCE) run by another session: the wire layer ends it as a
// server shutdown does (57P01), canceling the statement running.
func (s *Session) OnTerminate(f func()) {
	s.eng.conns.mu.Lock()
	s.terminate = f
	s.eng.conns.mu.Unlock()
}

// rights returns whether the session's role is a superuser and whether it
// may create databases. Under trust authentication every role is a
// superuser.
func (s *Session) rights() (super, createDB bool) {
	if !s.eng.AuthEnabled {
		return true, true
	}
	r, err := s.eng.db.Role(s.User)
	if err != nil {
		return false, false
	}
	return r.Superuser, r.Superuser || r.CreateDB
}

// ownsDatabase reports whether the session's role owns d; the bootstrap
// superuser owns the databases with no owner recorded.
func (s *Session) ownsDatabase(d *storage.DatabaseDesc) bool {
	return d.Owner != "" && d.Owner == s.User
}

// execDatabase runs CREATE, DROP and ALTER DATABASE. Like role
// statements they are not part of any transaction; CREATE and DROP are
// refused inside a transaction block, as in PostgreSQL.
func (s *Session) execDatabase(st sql.Stmt, w ResultWriter) error {
	switch st := st.(type) {
	case *sql.CreateDatabase:
		if s.explicit || s.multi {
			return pgerror.New(pgerror.ActiveSQLTransaction, "CREATE DATABASE cannot run inside a transaction block")
		}
		return s.createDatabase(st, w)
	case *sql.DropDatabase:
		if s.explicit || s.multi {
			return pgerror.New(pgerror.ActiveSQLTransaction, "DROP DATABASE cannot run inside a transaction block")
		}
		return s.dropDatabase(st, w)
	case *sql.AlterDatabase:
		return s.alterDatabase(st, w)
	}
	return pgerror.AssertionFailedf("unhandled database statement %T", st)
}

func (s *Session) createDatabase(st *sql.CreateDatabase, w ResultWriter) error {
	super, createDB := s.rights()
	if !createDB {
		return pgerror.New(pgerror.InsufficientPrivilege, "permission denied to create database")
	}
	owner := st.Owner
	if owner == "" {
		owner = s.User
	}
	if owner != s.User {
		if _, err := s.eng.db.Role(owner); err != nil {
			return err
		}
		if !super {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must be able to SET ROLE \"%s\"", owner)
		}
	}
	if _, err := s.eng.db.CreateDatabase(st.Name, owner); err != nil {
		return err
	}
	return w.WriteComplete("CREATE DATABASE")
}

func (s *Session) dropDatabase(st *sql.DropDatabase, w ResultWriter) error {
	db := s.eng.db
	d, err := db.LookupDatabase(st.Name)
	if err != nil {
		if st.IfExists && pgerror.GetCode(err) == pgerror.InvalidCatalogName {
			if err := s.notice(w, severityNotice, pgerror.SuccessfulCompletion, "database \"%s\" does not exist, skipping", st.Name); err != nil {
				return err
			}
			return w.WriteComplete("DROP DATABASE")
		}
		return err
	}
	super, _ := s.rights()
	if !super && !s.ownsDatabase(d) {
		return pgerror.Newf(pgerror.InsufficientPrivilege, "must be owner of database %s", d.Name)
	}
	if d.OID == s.dbOID {
		return pgerror.New(pgerror.ObjectInUse, "cannot drop the currently open database")
	}
	if st.Force {
		if err := s.terminateSessions(d.OID, super); err != nil {
			return err
		}
	}
	if err := s.closeDatabase(d); err != nil {
		return err
	}
	defer s.eng.conns.reopen(d.OID)
	if _, err := db.DropDatabase(d.Name, false); err != nil {
		return err
	}
	return w.WriteComplete("DROP DATABASE")
}

// terminateSessions ends the sessions connected to database oid, as
// DROP DATABASE ... WITH (FORCE) does. Only a superuser may end a
// superuser's session.
func (s *Session) terminateSessions(oid uint32, super bool) error {
	others := s.eng.conns.sessions(oid)
	if !super {
		for _, o := range others {
			if r, err := s.eng.db.Role(o.User); err == nil && r.Superuser {
				return pgerror.New(pgerror.InsufficientPrivilege, "permission denied to terminate process").
					WithDetail("Only roles with the SUPERUSER attribute may terminate processes of roles with the SUPERUSER attribute.")
			}
		}
	}
	for _, o := range others {
		s.eng.conns.mu.Lock()
		f := o.terminate
		s.eng.conns.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return nil
}

// closeDatabase waits for the other sessions of d to end (DropWait) and
// keeps new ones out until reopened; 55006 if some are still there.
func (s *Session) closeDatabase(d *storage.DatabaseDesc) error {
	wait := s.eng.DropWait
	if wait == 0 {
		wait = DefaultDropWait
	}
	n := s.eng.conns.close(d.OID, wait)
	if n == 0 {
		return nil
	}
	detail := "There is 1 other session using the database."
	if n > 1 {
		detail = "There are " + strconv.Itoa(n) + " other sessions using the database."
	}
	return pgerror.Newf(pgerror.ObjectInUse, "database \"%s\" is being accessed by other users", d.Name).WithDetail("%s", detail)
}

func (s *Session) alterDatabase(st *sql.AlterDatabase, w ResultWriter) error {
	db := s.eng.db
	d, err := db.LookupDatabase(st.Name)
	if err != nil {
		return err
	}
	super, createDB := s.rights()
	if !super && !s.ownsDatabase(d) {
		return pgerror.Newf(pgerror.InsufficientPrivilege, "must be owner of database %s", d.Name)
	}
	if st.RenameTo != "" {
		if !createDB {
			return pgerror.New(pgerror.InsufficientPrivilege, "permission denied to rename database")
		}
		if d.OID == s.dbOID {
			return pgerror.New(pgerror.FeatureNotSupported, "current database cannot be renamed")
		}
		if _, err := db.LookupDatabase(st.RenameTo); err == nil {
			return pgerror.Newf(pgerror.DuplicateDatabase, "database \"%s\" already exists", st.RenameTo)
		}
		if err := s.closeDatabase(d); err != nil {
			return err
		}
		defer s.eng.conns.reopen(d.OID)
		if err := db.RenameDatabase(d.Name, st.RenameTo); err != nil {
			return err
		}
		return w.WriteComplete("ALTER DATABASE")
	}
	if st.Owner != s.User {
		if _, err := db.Role(st.Owner); err != nil {
			return err
		}
	}
	if !super {
		if st.Owner != s.User {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "must be able to SET ROLE \"%s\"", st.Owner)
		}
		if !createDB {
			return pgerror.New(pgerror.InsufficientPrivilege, "permission denied to change owner of database")
		}
	}
	if err := db.SetDatabaseOwner(d.Name, st.Owner); err != nil {
		return err
	}
	return w.WriteComplete("ALTER DATABASE")
}

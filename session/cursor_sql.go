package session

import (
	"context"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/sql"
)

// execCursorStmt runs DECLARE, FETCH, MOVE, CLOSE and DEALLOCATE. A SQL
// cursor is a portal, in the namespace of the extended protocol's named
// portals, as in PostgreSQL.
func (s *Session) execCursorStmt(ctx context.Context, stmt sql.Stmt, w ResultWriter) error {
	switch st := stmt.(type) {
	case *sql.DeclareCursor:
		return s.declareCursor(ctx, st, w)
	case *sql.Fetch:
		return s.fetchCursor(ctx, st, w)
	case *sql.CloseCursor:
		if st.Name == "" {
			for name := range s.portals {
				s.ClosePortal(name)
			}
			return w.WriteComplete("CLOSE CURSOR ALL")
		}
		if _, ok := s.portals[st.Name]; !ok {
			return pgerror.Newf(pgerror.InvalidCursorName, "cursor \"%s\" does not exist", st.Name)
		}
		s.ClosePortal(st.Name)
		return w.WriteComplete("CLOSE CURSOR")
	case *sql.Deallocate:
		if st.Name == "" {
			clear(s.stmts)
			return w.WriteComplete("DEALLOCATE ALL")
		}
		if _, err := s.Statement(st.Name); err != nil {
			return err
		}
		s.CloseStatement(st.Name)
		return w.WriteComplete("DEALLOCATE")
	}
	return pgerror.AssertionFailedf("unhandled cursor statement %T", stmt)
}

// declareCursor opens a cursor over a query. WITHOUT HOLD (the default) it
// lives until its transaction block ends and reads as the query goes;
// WITH HOLD its rows are read at once and it outlives the transaction.
func (s *Session) declareCursor(ctx context.Context, st *sql.DeclareCursor, w ResultWriter) error {
	if !st.Hold && !s.explicit {
		return pgerror.New(pgerror.NoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks")
	}
	if st.Name == "" {
		return pgerror.New(pgerror.InvalidCursorName, "invalid cursor name: must not be empty")
	}
	if _, ok := s.portals[st.Name]; ok {
		return pgerror.Newf(pgerror.DuplicateCursor, "cursor \"%s\" already exists", st.Name)
	}
	node, err := sql.BindSelect(s.catalog(), st.Query)
	if err != nil {
		return err
	}
	if err := s.authorize(node); err != nil {
		return err
	}
	node = s.plan(node)
	p := &Portal{cols: columnsOf(node.Columns()), started: true, hold: st.Hold}
	if st.Hold {
		m := &materializer{}
		if err := s.runQuery(ctx, node, m); err != nil {
			return err
		}
		p.cur.openMaterialized(m.rows, "")
	} else if err := p.cur.open(s, ctx, node); err != nil {
		return err
	}
	if s.portals == nil {
		s.portals = make(map[string]*Portal)
	}
	s.portals[st.Name] = p
	return w.WriteComplete("DECLARE CURSOR")
}

// fetchCursor runs FETCH or MOVE.
func (s *Session) fetchCursor(ctx context.Context, st *sql.Fetch, w ResultWriter) error {
	p, ok := s.portals[st.Name]
	if !ok {
		return pgerror.Newf(pgerror.InvalidCursorName, "cursor \"%s\" does not exist", st.Name)
	}
	if st.Count < 0 {
		return pgerror.New(pgerror.ObjectNotInPrerequisiteState, "cursor can only scan forward").
			WithHint("Declare it with SCROLL option to enable backward scan.")
	}
	verb := "FETCH "
	if st.Move {
		verb = "MOVE "
	} else if err := w.WriteColumns(p.cols); err != nil {
		return err
	}
	n := 0
	if st.Count > 0 {
		limit := 0
		if st.Count != sql.FetchAll && st.Count <= int64(^uint(0)>>1) {
			limit = int(st.Count)
		}
		var err error
		if n, err = p.cur.fetch(ctx, limit, w, st.Move); err != nil {
			return err
		}
	}
	return w.WriteComplete(verb + strconv.Itoa(n))
}

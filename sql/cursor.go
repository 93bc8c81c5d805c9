package sql

import (
	"math"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// Cursor statements: SQL's view of the extended protocol's portals.
type (
	// DeclareCursor is DECLARE name [NO SCROLL] CURSOR [WITH HOLD] FOR query.
	DeclareCursor struct {
		Name  string
		Hold  bool
		Query *Select
	}
	// Fetch is FETCH [FORWARD] [n | ALL] FROM name, or MOVE.
	Fetch struct {
		Name string
		// Count is how many rows; FetchAll is every row left.
		Count int64
		Move  bool
	}
	// CloseCursor is CLOSE name, or CLOSE ALL when Name is "".
	CloseCursor struct{ Name string }
	// Deallocate is DEALLOCATE [PREPARE] name, or DEALLOCATE ALL when Name is "".
	Deallocate struct{ Name string }
)

// FetchAll is Fetch.Count for FETCH ALL.
const FetchAll = math.MaxInt64

func (*DeclareCursor) stmt() {}
func (*Fetch) stmt()         {}
func (*CloseCursor) stmt()   {}
func (*Deallocate) stmt()    {}

// Options of DECLARE, as PostgreSQL's grammar sets them.
const (
	cursorOptBinary = 0x1
	cursorOptScroll = 0x2
	cursorOptHold   = 0x20
)

// convertCursorStmt converts DECLARE, FETCH, MOVE, CLOSE and DEALLOCATE.
func convertCursorStmt(n *pg.Node) (Stmt, error) {
	switch s := n.Node.(type) {
	case *pg.Node_DeclareCursorStmt:
		d := s.DeclareCursorStmt
		if d.Options&cursorOptScroll != 0 {
			return nil, unsupported("scrollable cursors")
		}
		if d.Options&cursorOptBinary != 0 {
			return nil, unsupported("binary cursors")
		}
		sel, ok := d.Query.GetNode().(*pg.Node_SelectStmt)
		if !ok {
			return nil, unsupported("cursors over statements other than SELECT")
		}
		q, err := convertSelect(sel.SelectStmt)
		if err != nil {
			return nil, err
		}
		return &DeclareCursor{Name: d.Portalname, Hold: d.Options&cursorOptHold != 0, Query: q}, nil
	case *pg.Node_FetchStmt:
		f := s.FetchStmt
		if f.Direction != pg.FetchDirection_FETCH_FORWARD {
			return nil, unsupported("fetching other than forward (the cursor is not scrollable)")
		}
		return &Fetch{Name: f.Portalname, Count: f.HowMany, Move: f.Ismove}, nil
	case *pg.Node_ClosePortalStmt:
		return &CloseCursor{Name: s.ClosePortalStmt.Portalname}, nil
	case *pg.Node_DeallocateStmt:
		return &Deallocate{Name: s.DeallocateStmt.Name}, nil
	}
	return nil, unsupported("this statement")
}

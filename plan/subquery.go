package plan

import (
	"fmt"

	"github.com/deeplaked/deeplaked/types"
)

// SubqueryKind is how a Subquery's rows become a value.
type SubqueryKind uint8

// Subquery kinds.
const (
	// SubScalar is the single column of the single row (NULL if none; more
	// than one row is an error).
	SubScalar SubqueryKind = iota + 1
	// SubExists is true when the plan returns any row.
	SubExists
	// SubAny is Test Op ANY (rows of the single column); IN is = ANY.
	SubAny
	// SubAll is Test Op ALL (rows of the single column).
	SubAll
	// SubArray is the text form of an array of the single column's rows.
	SubArray
)

// Subquery runs Plan to compute a value. Args are expressions over the
// enclosing operator's input that Plan reads as Params (the outer columns a
// correlated subquery names); a subquery without Args is evaluated once.
type Subquery struct {
	Kind SubqueryKind
	Plan Node
	Args []Expr
	Test Expr // SubAny, SubAll: the compared value
	Op   Op   // SubAny, SubAll: the comparison
	Typ  types.Type
}

// Param reads argument Idx of the innermost enclosing Subquery.
type Param struct {
	Idx int
	Typ types.Type
}

func (e *Subquery) Type() types.Type { return e.Typ }
func (e *Param) Type() types.Type    { return e.Typ }

func (e *Subquery) String() string {
	s := fmt.Sprintf("subquery%d(%p", e.Kind, e.Plan)
	if e.Test != nil {
		s += ", " + e.Test.String()
	}
	for _, a := range e.Args {
		s += ", " + a.String()
	}
	return s + ")"
}

func (e *Param) String() string { return fmt.Sprintf("$%d", e.Idx+1) }

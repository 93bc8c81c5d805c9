// Package plan is the typed intermediate representation shared by sql (which
// builds it from the AST), planner (which rewrites it) and exec (which runs
// it): typed scalar expressions and relational plan nodes. It holds data
// only; no package below exec knows how to evaluate it.
package plan

import (
	"fmt"
	"strings"

	"github.com/deeplaked/deeplaked/types"
)

// Expr is a typed scalar expression evaluated once per input row.
type Expr interface {
	Type() types.Type
	String() string
}

// ColRef reads column Idx of the operator's input.
type ColRef struct {
	Idx  int
	Typ  types.Type
	Name string
}

// Const is a literal. Text holds the literal's source text for Unknown-typed
// strings; Val holds a one-row Vec with the value for typed constants.
type Const struct {
	Typ  types.Type
	Null bool
	Val  *types.Vec // one row, nil when Null
	// Param marks the placeholder a parameter $n binds to while its
	// statement is described (Null, of the parameter's type so far); a
	// cast of an Unknown placeholder gives the parameter its type.
	Param *ParamInfo
	// Array marks an Unknown constant written as ARRAY[...]; its text is
	// PostgreSQL's array form.
	Array bool
}

// ParamInfo is what binding learns of one parameter $N: its type,
// declared by the client or inferred from where it is used (Unknown until
// then).
type ParamInfo struct {
	N    int
	Type types.Type
}

// Op identifies an operator or built-in function.
type Op uint8

// Operators and functions.
const (
	OpAdd Op = iota + 1
	OpSub
	OpMul
	OpDiv
	OpMod
	OpNeg
	OpConcat
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpAnd
	OpOr
	OpNot
	OpIsNull
	OpIsNotNull
	OpIn      // Args[0] IN (Args[1:]...)
	OpLike    // Args[0] LIKE Args[1]
	OpILike   // Args[0] ILIKE Args[1]
	OpJSONGet // -> : Args[1] text key or integer index
	OpJSONGetText
	OpJSONContains
	OpSubscript // Args[0][Args[1]][Args[2]]...
	OpCardinality
	OpArrayLength
	OpVectorDims
	OpRandom
	OpAbs
	OpLower
	OpUpper
	OpLength
	OpCoalesce
	OpNullIf
	OpNextVal // serial default; Seq identifies the sequence
	OpPgSleep // pg_sleep(seconds)
	// Vector distances (pgvector): Args are two vectors or float32
	// tensors of one dimension, the result float8.
	OpL2Distance      // <->, l2_distance
	OpNegInnerProduct // <#>
	OpCosineDistance  // <=>, cosine_distance
	OpL1Distance      // <+>, l1_distance
	OpInnerProduct    // inner_product
	OpVectorNorm      // vector_norm
	OpL2Normalize     // l2_normalize
	// pgvector's element-wise arithmetic and concatenation of two vectors
	// or two halfvecs, and subvector(v, start, count).
	OpVectorAdd    // +
	OpVectorSub    // -
	OpVectorMul    // *
	OpVectorConcat // ||
	OpSubvector    // subvector
	// OpArray is ARRAY[...] of non-constant numbers or booleans: Args are
	// the elements in row-major order, of the element type; Typ the
	// tensor, whose shape gives the nesting.
	OpArray
)

var opNames = [...]string{
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%", OpNeg: "-", OpConcat: "||",
	OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpAnd: "AND", OpOr: "OR",
	OpNot: "NOT", OpIsNull: "IS NULL", OpIsNotNull: "IS NOT NULL", OpIn: "IN", OpLike: "LIKE",
	OpILike: "ILIKE", OpJSONGet: "->", OpJSONGetText: "->>", OpJSONContains: "@>",
	OpSubscript: "[]", OpCardinality: "cardinality", OpArrayLength: "array_length",
	OpVectorDims: "vector_dims", OpRandom: "random", OpAbs: "abs", OpLower: "lower",
	OpUpper: "upper", OpLength: "length", OpCoalesce: "coalesce", OpNullIf: "nullif",
	OpNextVal: "nextval", OpPgSleep: "pg_sleep",
	OpL2Distance: "<->", OpNegInnerProduct: "<#>", OpCosineDistance: "<=>", OpL1Distance: "<+>",
	OpInnerProduct: "inner_product", OpVectorNorm: "vector_norm", OpL2Normalize: "l2_normalize",
	OpVectorAdd: "+", OpVectorSub: "-", OpVectorMul: "*", OpVectorConcat: "||", OpSubvector: "subvector",
	OpArray: "array",
}

// Volatile reports whether o's value or effect can differ between two
// evaluations over the same row: random(), nextval(), pg_sleep().
func (o Op) Volatile() bool {
	return o == OpRandom || o == OpNextVal || o == OpPgSleep
}

// RowWise reports whether e's value for a row depends on that row alone
// (and the statement's parameters), so that it may be computed for any
// subset of the rows, in any order, or more than once: no volatile call
// and no subquery.
func RowWise(e Expr) bool {
	switch e := e.(type) {
	case *ColRef, *Const, *Param:
		return true
	case *Cast:
		return RowWise(e.X)
	case *Call:
		return !e.Op.Volatile() && allRowWise(e.Args)
	case *Func:
		return allRowWise(e.Args)
	case *Case:
		if e.Else != nil && !RowWise(e.Else) {
			return false
		}
		for _, w := range e.Whens {
			if !RowWise(w.Cond) || !RowWise(w.Result) {
				return false
			}
		}
		return true
	}
	return false
}

func allRowWise(es []Expr) bool {
	for _, e := range es {
		if !RowWise(e) {
			return false
		}
	}
	return true
}

// IsDistance reports whether o is one of the vector distance operators
// an ORDER BY ... LIMIT k search sorts by.
func (o Op) IsDistance() bool {
	return o == OpL2Distance || o == OpNegInnerProduct || o == OpCosineDistance || o == OpL1Distance
}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", o)
}

// Call applies Op to Args.
type Call struct {
	Op   Op
	Args []Expr
	Typ  types.Type
	// Seq names the sequence of OpNextVal.
	Seq SeqRef
}

// SeqRef identifies a serial column's sequence.
type SeqRef struct {
	TableID uint64
	Col     int
}

// Cast converts X to Typ.
type Cast struct {
	X   Expr
	Typ types.Type
}

// Case is CASE WHEN c THEN r ... ELSE e END.
type Case struct {
	Whens []When
	Else  Expr // nil means NULL
	Typ   types.Type
}

// When is one arm of a Case.
type When struct{ Cond, Result Expr }

func (e *ColRef) Type() types.Type { return e.Typ }
func (e *Const) Type() types.Type  { return e.Typ }
func (e *Call) Type() types.Type   { return e.Typ }
func (e *Cast) Type() types.Type   { return e.Typ }
func (e *Case) Type() types.Type   { return e.Typ }

func (e *ColRef) String() string { return fmt.Sprintf("#%d", e.Idx) }

func (e *Const) String() string {
	if e.Null {
		return "NULL"
	}
	if e.Val == nil {
		return "?"
	}
	return "'" + string(types.AppendText(nil, e.Val, 0)) + "'::" + e.Typ.String()
}

func (e *Call) String() string {
	var b strings.Builder
	b.WriteString(e.Op.String())
	b.WriteByte('(')
	for i, a := range e.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(')')
	return b.String()
}

func (e *Cast) String() string { return "(" + e.X.String() + ")::" + e.Typ.String() }

func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Result.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

// NullConst returns a NULL of type t.
func NullConst(t types.Type) *Const { return &Const{Typ: t, Null: true} }

// IntConst returns an integer constant of type t.
func IntConst(t types.Type, v int64) *Const {
	vec := types.NewVec(t, 1)
	vec.AppendInt(v)
	return &Const{Typ: t, Val: vec}
}

// FloatConst returns a float8 constant.
func FloatConst(v float64) *Const {
	vec := types.NewVec(types.TypFloat8, 1)
	vec.AppendFloat(v)
	return &Const{Typ: types.TypFloat8, Val: vec}
}

// BoolConst returns a bool constant.
func BoolConst(v bool) *Const {
	vec := types.NewVec(types.TypBool, 1)
	vec.AppendBool(v)
	return &Const{Typ: types.TypBool, Val: vec}
}

// StringConst returns a constant of a bytes-backed type t (Unknown for an
// untyped literal, which binding later casts to its context's type).
func StringConst(t types.Type, s string) *Const {
	vec := types.NewVec(types.Type{Kind: types.Text}, 1)
	vec.AppendString(s)
	vec.Type = t
	return &Const{Typ: t, Val: vec}
}

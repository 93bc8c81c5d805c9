// Package sql turns SQL text into the typed plan IR: Parse converts
// pg_query_go's PostgreSQL parse tree into the project's own AST (ast.go),
// and Bind resolves that AST against the catalog into plan nodes. Nothing
// below this package sees pg_query types.
package sql

import "github.com/deeplaked/deeplaked/types"

// Stmt is a parsed statement.
type Stmt interface{ stmt() }

// Expr is an untyped expression as written.
type Expr interface{ expr() }

// Statements.
type (
	// CreateTable is CREATE TABLE.
	CreateTable struct {
		Name        string
		IfNotExists bool
		Columns     []ColumnDef
		PrimaryKey  []string // from a table constraint
		// Options are the storage parameters of WITH (...).
		Options []Option
	}
	// ColumnDef is one column of CREATE TABLE.
	ColumnDef struct {
		Name       string
		Type       types.Type
		Serial     bool
		NotNull    bool
		PrimaryKey bool
		Default    Expr
		// DefaultSQL is the DEFAULT expression's source text.
		DefaultSQL string
		// Compression is the COMPRESSION clause's method, "" if none.
		Compression string
	}
	// CreateTableAs is CREATE TABLE ... AS query and SELECT ... INTO.
	CreateTableAs struct {
		Name        string
		IfNotExists bool
		// Columns names the first columns (the query's names otherwise).
		Columns []string
		Query   *Select
		// NoData is WITH NO DATA: the table is created empty.
		NoData  bool
		Options []Option
	}
	// Truncate is TRUNCATE [TABLE] names.
	Truncate struct {
		Tables []string
	}
	// DropTable is DROP TABLE.
	DropTable struct {
		Names    []string
		IfExists bool
		// View marks DROP VIEW.
		View bool
	}
	// CreateView is CREATE [OR REPLACE] VIEW name [(columns)] AS query.
	// SQL is the query's text as the parser deparses it, which the view
	// keeps and binds again wherever it is named.
	CreateView struct {
		Name    string
		Columns []string
		Query   *Select
		SQL     string
		Replace bool
	}
	// Insert is INSERT INTO ... VALUES.
	Insert struct {
		Table     string
		Columns   []string
		Rows      [][]Expr // nil entries are DEFAULT
		Select    *Select  // INSERT ... SELECT, when Rows is nil
		Returning []SelectItem
	}
	// Update is UPDATE ... SET ... WHERE.
	Update struct {
		Table     string
		Alias     string
		Set       []SetClause
		Where     Expr
		Returning []SelectItem
	}
	// SetClause is one col = expr of UPDATE.
	SetClause struct {
		Column string
		Value  Expr // nil is DEFAULT
	}
	// Delete is DELETE FROM ... WHERE.
	Delete struct {
		Table     string
		Alias     string
		Where     Expr
		Returning []SelectItem
	}
	// Select is a SELECT query.
	Select struct {
		Distinct bool
		Items    []SelectItem
		From     *TableRef // nil for SELECT without FROM
		Where    Expr
		GroupBy  []Expr
		Having   Expr
		OrderBy  []OrderItem
		Limit    Expr
		Offset   Expr
		Values   [][]Expr // a bare VALUES list
		// Windows are the WINDOW clause's named windows.
		Windows []NamedWindow
		// SetOp combines Larg and Rarg (UNION [ALL]); OrderBy, Limit and
		// Offset then apply to the combined rows.
		SetOp      SetOpKind
		SetAll     bool
		Larg, Rarg *Select
		// With holds the WITH clause's common table expressions.
		With []CTE
		// Locking is FOR UPDATE/SHARE on the statement: rows are not
		// locked, but the clause needs UPDATE as in PostgreSQL.
		Locking bool
	}
	// CTE is one name [(cols)] AS (query) of WITH; Recursive when the WITH
	// is WITH RECURSIVE.
	CTE struct {
		Name      string
		Cols      []string
		Query     *Select
		Recursive bool
	}
	// SelectItem is an output expression; Star selects every column, or
	// every column of StarTable when it is set (t.*).
	SelectItem struct {
		Expr      Expr
		Alias     string
		Star      bool
		StarTable string
	}
	// TableRef is one item of FROM: a table ([Schema.]Name), a join
	// (Join), or a subquery (Subquery, which must have an Alias).
	TableRef struct {
		Schema   string
		Name     string
		Alias    string
		Join     *JoinClause
		Subquery *Select
		// Func is a set-returning function (generate_series).
		Func *FuncCall
		// ColAliases rename the item's columns: AS alias (a, b).
		ColAliases []string
		// Lateral items (LATERAL subqueries, functions) may name the
		// columns of the FROM items before them.
		Lateral bool
	}
	// JoinClause is Left [NATURAL] kind JOIN Right [ON On | USING (Using)].
	JoinClause struct {
		Kind        JoinKind
		Left, Right *TableRef
		Natural     bool
		Using       []string
		On          Expr
	}
	// OrderItem is one ORDER BY key. Nulls is 0 (default), 1 first, 2 last.
	OrderItem struct {
		Expr  Expr
		Desc  bool
		Nulls int
	}
	// TxStmt is BEGIN, COMMIT or ROLLBACK. Start is set for START
	// TRANSACTION, whose command tag is its own.
	TxStmt struct {
		Kind  TxKind
		Start bool
	}
	// SetVar is SET [SESSION | LOCAL] name {TO | =} value [, ...], SET name
	// TO DEFAULT, SET TIME ZONE, RESET name and RESET ALL.
	SetVar struct {
		Name  string   // lower case; empty for RESET ALL
		Args  []SetArg // nil for DEFAULT and RESET
		Local bool     // SET LOCAL: until the end of the transaction
		Reset bool     // DEFAULT or RESET: back to the session's default
		// Tag is the command tag: "SET" or "RESET".
		Tag string
		// Multi holds the settings of SET TRANSACTION ... and SET SESSION
		// CHARACTERISTICS AS TRANSACTION ..., one per option.
		Multi []*SetVar
	}
	// Discard is DISCARD ALL, PLANS, SEQUENCES or TEMP (Target, upper case).
	Discard struct{ Target string }
	// SetSnapshot is SET TRANSACTION SNAPSHOT 'id': the transaction reads
	// the snapshot another one exported (pg_export_snapshot()).
	SetSnapshot struct{ ID string }
	// SetArg is one value of SET: a string or a name as written, or a
	// number as text.
	SetArg struct {
		Text   string
		Number bool
	}
	// ShowVar is SHOW name; the name is lower case, "all" for SHOW ALL.
	ShowVar struct{ Name string }
	// Copy is COPY table [(cols)] FROM STDIN [WITH (options)].
	Copy struct {
		Table   string
		Columns []string
		Options []Option
	}
	// Vacuum is VACUUM [table, ...]; no tables means every table.
	Vacuum struct{ Tables []string }
	// Option is one name [value] entry of an option list (COPY's WITH
	// (...), CREATE TABLE's WITH (...)). Value is the argument as text: a
	// string or identifier as written, a number in decimal, a boolean as
	// "true" or "false".
	Option struct {
		Name     string
		Value    string
		HasValue bool
	}
)

// TxKind is the kind of a transaction statement.
type TxKind uint8

// Transaction statement kinds.
const (
	TxBegin TxKind = iota + 1
	TxCommit
	TxRollback
)

// SetOpKind is the set operation of a Select.
type SetOpKind uint8

// Set operations.
const (
	SetUnion SetOpKind = iota + 1
	SetIntersect
	SetExcept
)

// JoinKind is the kind of a join.
type JoinKind uint8

// Join kinds.
const (
	JoinInner JoinKind = iota + 1
	JoinCross
	JoinLeft
	JoinRight
	JoinFull
)

// SubKind is the kind of a subquery expression.
type SubKind uint8

// Subquery kinds.
const (
	SubScalar SubKind = iota + 1
	SubExists
	SubArray
	SubAny
	SubAll
)

// Expressions.
type (
	// ColumnRef is [table.]column.
	ColumnRef struct{ Table, Name string }
	// Literal is a constant as written: Kind one of LitInt, LitFloat, LitString, LitBool, LitNull.
	Literal struct {
		Kind LitKind
		Text string
	}
	// BinaryExpr is L op R for an operator spelled Op ("+", "=", "->", "~~", ...).
	BinaryExpr struct {
		Op   string
		L, R Expr
	}
	// UnaryExpr is op X ("-", "+").
	UnaryExpr struct {
		Op string
		X  Expr
	}
	// AndExpr, OrExpr and NotExpr are boolean connectives.
	AndExpr struct{ Args []Expr }
	OrExpr  struct{ Args []Expr }
	NotExpr struct{ X Expr }
	// InExpr is X [NOT] IN (List).
	InExpr struct {
		X    Expr
		List []Expr
		Not  bool
	}
	// IsNullExpr is X IS [NOT] NULL.
	IsNullExpr struct {
		X   Expr
		Not bool
	}
	// BetweenExpr is X [NOT] BETWEEN Lo AND Hi.
	BetweenExpr struct {
		X, Lo, Hi Expr
		Not       bool
	}
	// LikeExpr is X [NOT] [I]LIKE Pattern.
	LikeExpr struct {
		X, Pattern Expr
		Not, ILike bool
	}
	// FuncCall is name(args), name(*) or name(DISTINCT args).
	FuncCall struct {
		Name     string
		Args     []Expr
		Star     bool
		Distinct bool
		// Over makes it a window function call.
		Over *WindowSpec
	}
	// CastExpr is X::Type or CAST(X AS Type).
	CastExpr struct {
		X    Expr
		Type types.Type
	}
	// SubscriptExpr is X[i][j]...
	SubscriptExpr struct {
		X       Expr
		Indexes []Expr
	}
	// CaseExpr is CASE [Arg] WHEN ... THEN ... [ELSE ...] END.
	CaseExpr struct {
		Arg   Expr
		Whens []CaseWhen
		Else  Expr
	}
	// CaseWhen is one WHEN arm.
	CaseWhen struct{ Cond, Result Expr }
	// FieldSelect is (X).Field, a field of a composite value.
	FieldSelect struct {
		X     Expr
		Field string
	}
	// ArrayCmpExpr is X op ANY (Array) or, with All, X op ALL (Array).
	ArrayCmpExpr struct {
		X, Array Expr
		Op       string
		All      bool
	}
	// BoolTest is X IS [NOT] TRUE/FALSE.
	BoolTest struct {
		X     Expr
		Value bool
		Not   bool
	}
	// SubqueryExpr is a subquery in an expression: (SELECT ...), EXISTS
	// (...), ARRAY(...), or X op ANY/ALL (...).
	SubqueryExpr struct {
		Kind  SubKind
		Query *Select
		Op    string // for SubAny and SubAll
		X     Expr   // for SubAny and SubAll
	}
	// Param is a parameter placeholder $N (1-based).
	Param struct{ N int }
)

// LitKind classifies a Literal.
type LitKind uint8

// Literal kinds.
const (
	LitInt LitKind = iota + 1
	LitFloat
	LitString
	LitBool
	LitNull
)

func (*CreateTable) stmt()   {}
func (*CreateTableAs) stmt() {}
func (*CreateView) stmt()    {}
func (*Truncate) stmt()      {}
func (*DropTable) stmt()     {}
func (*Insert) stmt()        {}
func (*Update) stmt()        {}
func (*Delete) stmt()        {}
func (*Select) stmt()        {}
func (*TxStmt) stmt()        {}
func (*SetVar) stmt()        {}
func (*ShowVar) stmt()       {}
func (*Discard) stmt()       {}
func (*SetSnapshot) stmt()   {}
func (*Copy) stmt()          {}
func (*Vacuum) stmt()        {}

func (*ColumnRef) expr()     {}
func (*Literal) expr()       {}
func (*BinaryExpr) expr()    {}
func (*UnaryExpr) expr()     {}
func (*AndExpr) expr()       {}
func (*OrExpr) expr()        {}
func (*NotExpr) expr()       {}
func (*InExpr) expr()        {}
func (*IsNullExpr) expr()    {}
func (*BetweenExpr) expr()   {}
func (*LikeExpr) expr()      {}
func (*FuncCall) expr()      {}
func (*CastExpr) expr()      {}
func (*SubscriptExpr) expr() {}
func (*CaseExpr) expr()      {}
func (*BoolTest) expr()      {}
func (*SubqueryExpr) expr()  {}
func (*ArrayCmpExpr) expr()  {}
func (*FieldSelect) expr()   {}
func (*Param) expr()         {}

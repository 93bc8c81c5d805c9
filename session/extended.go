package session

import (
	"context"
	"io"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/types"
)

// Prepared is a statement of the extended query protocol, made by Parse
// (or PREPARE): its parsed form, the types of its parameters and the
// columns it returns.
type Prepared struct {
	Query string
	// stmt is nil for an empty query string.
	stmt *sql.Parsed
	// params describes each parameter.
	params []paramSpec
	// cols are the result columns, nil when the statement returns no rows.
	cols []Column
}

// ParamOIDs returns the type OID of each parameter, as ParameterDescription
// reports them: the client's declared types, inferred ones elsewhere.
func (p *Prepared) ParamOIDs() []uint32 {
	oids := make([]uint32, len(p.params))
	for i, ps := range p.params {
		oids[i] = ps.oid
	}
	return oids
}

// Columns returns the result columns, or nil for a statement that returns
// no rows.
func (p *Prepared) Columns() []Column { return p.cols }

// paramSpec is one parameter of a prepared statement.
type paramSpec struct {
	// oid is the type the client declared or binding inferred.
	oid uint32
	// typ is the type its value binds as. A parameter of a type deeplaked
	// has no values of (numeric, arrays, bpchar, ...) binds as Unknown:
	// its value is converted to text, and then as a quoted literal would be.
	typ types.Type
	// foreign marks such a parameter.
	foreign bool
}

// Portal is a prepared statement bound to parameter values, ready to run;
// a portal that has started keeps its rows' cursor between Executes.
type Portal struct {
	stmt   *Prepared
	params *sql.Params
	cols   []Column
	// started is set by the first Execute; done once the statement has
	// completed.
	started, done bool
	cur           cursor
	// hold marks a cursor declared WITH HOLD, which outlives its
	// transaction.
	hold bool
}

// Columns returns the portal's result columns, or nil.
func (p *Portal) Columns() []Column { return p.cols }

// Prepare parses query as the statement name ("" is the unnamed one),
// with the parameter types the client declared (0 for one to infer), and
// binds it once to learn its parameter and result types.
func (s *Session) Prepare(name, query string, declared []uint32) (*Prepared, error) {
	ps, err := s.prepare(name, query, declared)
	if err != nil {
		s.abort()
	}
	return ps, err
}

func (s *Session) prepare(name, query string, declared []uint32) (*Prepared, error) {
	if name != "" {
		if _, ok := s.stmts[name]; ok {
			return nil, pgerror.Newf(pgerror.DuplicatePreparedStatement, "prepared statement \"%s\" already exists", name)
		}
	}
	stmts, err := s.parse(query)
	if err != nil {
		return nil, err
	}
	if len(stmts) > 1 {
		return nil, pgerror.New(pgerror.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	if s.explicit && s.failed && (len(stmts) == 0 || !isTxExit(&stmts[0])) {
		return nil, errTxAborted
	}
	ps := &Prepared{Query: query}
	specs := make([]paramSpec, len(declared))
	bindTypes := make([]types.Type, len(declared))
	for i, oid := range declared {
		spec, err := declaredParam(oid)
		if err != nil {
			return nil, err
		}
		specs[i] = spec
		bindTypes[i] = spec.typ
	}
	if len(stmts) == 1 {
		ps.stmt = &stmts[0]
		params := sql.NewParams(bindTypes)
		cols, err := s.describe(ps.stmt.Stmt, params)
		if err != nil {
			return nil, err
		}
		if err := params.Resolve(); err != nil {
			return nil, err
		}
		for i, t := range params.Types {
			if i >= len(specs) {
				specs = append(specs, paramSpec{oid: t.OID(), typ: t})
				continue
			}
			if !specs[i].foreign && specs[i].oid == 0 {
				specs[i] = paramSpec{oid: t.OID(), typ: t}
			}
			if specs[i].foreign {
				// The value is converted from text to the type the
				// statement gave it.
				specs[i].typ = t
			}
		}
		ps.cols = cols
	}
	ps.params = specs
	if s.stmts == nil {
		s.stmts = make(map[string]*Prepared)
	}
	s.stmts[name] = ps
	return ps, nil
}

// declaredParam maps a parameter type a client declares to how it binds.
func declaredParam(oid uint32) (paramSpec, error) {
	switch oid {
	case 0, types.OIDUnknown:
		return paramSpec{typ: types.TypUnknown}, nil
	case types.OIDVector:
		return paramSpec{oid: oid, typ: types.VectorOf(0)}, nil
	case types.OIDHalfVec:
		return paramSpec{oid: oid, typ: types.HalfVecOf(0)}, nil
	}
	for _, t := range []types.Type{types.TypBool, types.TypBytea, types.TypInt8, types.TypInt2, types.TypInt4,
		types.TypText, types.TypJSON, types.TypFloat4, types.TypFloat8, {Kind: types.Varchar}, types.TypJSONB, {Kind: types.UUID},
		{Kind: types.Date}, {Kind: types.Timestamp}, {Kind: types.TimestampTZ}} {
		if t.OID() == oid {
			return paramSpec{oid: oid, typ: t}, nil
		}
	}
	if foreignParamType(oid) {
		return paramSpec{oid: oid, typ: types.TypUnknown, foreign: true}, nil
	}
	return paramSpec{}, pgerror.Newf(pgerror.UndefinedObject, "type with OID %d does not exist", oid)
}

// describe binds stmt with placeholder parameters and returns its result
// columns (nil for a statement without rows).
func (s *Session) describe(stmt sql.Stmt, params *sql.Params) ([]Column, error) {
	cat := sql.WithParams(s.views(), params)
	var cols []plan.Column
	switch st := stmt.(type) {
	case *sql.Select:
		n, err := sql.BindSelect(cat, st)
		if err != nil {
			return nil, err
		}
		cols = n.Columns()
	case *sql.Insert:
		n, err := sql.BindInsert(cat, st)
		if err != nil {
			return nil, err
		}
		cols = n.Columns()
	case *sql.Update:
		n, err := sql.BindUpdate(cat, st)
		if err != nil {
			return nil, err
		}
		cols = n.Columns()
	case *sql.Delete:
		n, err := sql.BindDelete(cat, st)
		if err != nil {
			return nil, err
		}
		cols = n.Columns()
	case *sql.CopyTo:
		if _, err := sql.BindCopyTo(cat, st); err != nil {
			return nil, err
		}
		return nil, nil
	case *sql.ShowVar:
		return s.showColumns(st)
	case *sql.Explain:
		if st.Copy != nil {
			if _, err := sql.BindCopyTo(cat, st.Copy); err != nil {
				return nil, err
			}
		} else if _, err := sql.BindSelect(cat, st.Query); err != nil {
			return nil, err
		}
		return explainColumns, nil
	case *sql.Fetch:
		if p, ok := s.portals[st.Name]; ok && !st.Move {
			return p.cols, nil
		}
		return nil, nil
	case *sql.CreateTableAs:
		// No rows either; the query's parameters take their types from it.
		if _, err := sql.BindSelect(cat, st.Query); err != nil {
			return nil, err
		}
		return nil, nil
	case *sql.DeclareCursor:
		// DECLARE returns no rows, but its query's parameters take their
		// types from the query, as in PostgreSQL: pgx prepares
		// DECLARE c CURSOR FOR ... WHERE n > $1 and sends as many values
		// as ParameterDescription lists.
		if _, err := sql.BindSelect(cat, st.Query); err != nil {
			return nil, err
		}
		return nil, nil
	default:
		return nil, nil
	}
	if len(cols) == 0 {
		return nil, nil
	}
	out := columnsOf(cols)
	for i := range out {
		if out[i].Type.Kind == types.Unknown {
			out[i].Type = types.TypText
		}
	}
	return out, nil
}

// Statement returns the prepared statement name.
func (s *Session) Statement(name string) (*Prepared, error) {
	ps, ok := s.stmts[name]
	if !ok {
		return nil, pgerror.Newf(pgerror.InvalidSQLStatementName, "prepared statement \"%s\" does not exist", name)
	}
	return ps, nil
}

// CloseStatement drops the prepared statement name; closing one that does
// not exist is not an error.
func (s *Session) CloseStatement(name string) { delete(s.stmts, name) }

// Bind binds the prepared statement stmtName to parameter values as the
// portal portalName ("" is the unnamed portal, which a new Bind replaces).
// values[i] nil is NULL; formats holds the format code of each value (0
// text, 1 binary) or one code for all, or none for all text.
func (s *Session) Bind(portalName, stmtName string, formats []int16, values [][]byte) (*Portal, error) {
	p, err := s.bind(portalName, stmtName, formats, values)
	if err != nil {
		s.abort()
	}
	return p, err
}

func (s *Session) bind(portalName, stmtName string, formats []int16, values [][]byte) (*Portal, error) {
	ps, err := s.Statement(stmtName)
	if err != nil {
		return nil, err
	}
	if s.explicit && s.failed && !isTxExit(ps.stmt) {
		return nil, errTxAborted
	}
	if old, ok := s.portals[portalName]; ok {
		if portalName != "" {
			return nil, pgerror.Newf(pgerror.DuplicateCursor, "cursor \"%s\" already exists", portalName)
		}
		old.close()
	}
	if len(values) != len(ps.params) {
		return nil, pgerror.Newf(pgerror.ProtocolViolation, "bind message supplies %d parameters, but prepared statement \"%s\" requires %d",
			len(values), stmtName, len(ps.params))
	}
	if len(formats) > 1 && len(formats) != len(values) {
		return nil, pgerror.Newf(pgerror.ProtocolViolation, "bind message has %d parameter formats but %d parameters", len(formats), len(values))
	}
	p := &Portal{stmt: ps, cols: ps.cols}
	if ps.stmt != nil {
		bindTypes := make([]types.Type, len(ps.params))
		vals := make([]*types.Vec, len(ps.params))
		for i, spec := range ps.params {
			format := int16(0)
			switch {
			case len(formats) == 1:
				format = formats[0]
			case len(formats) > 1:
				format = formats[i]
			}
			v, err := s.decodeParam(spec, format, values[i])
			if err != nil {
				return nil, pgerror.WithWhere(err, "unnamed portal parameter $"+strconv.Itoa(i+1))
			}
			bindTypes[i] = v.Type
			vals[i] = v
		}
		p.params = sql.NewParams(bindTypes)
		p.params.Values = vals
	}
	if s.portals == nil {
		s.portals = make(map[string]*Portal)
	}
	s.portals[portalName] = p
	return p, nil
}

// decodeParam decodes one parameter value into a one-row Vec.
func (s *Session) decodeParam(spec paramSpec, format int16, val []byte) (*types.Vec, error) {
	if format != 0 && format != 1 {
		return nil, pgerror.Newf(pgerror.ProtocolViolation, "unsupported format code: %d", format)
	}
	t := spec.typ
	if spec.foreign {
		t = types.TypUnknown
	}
	v := types.NewVec(t, 1)
	if val == nil {
		v.AppendNull()
		return v, nil
	}
	if spec.foreign {
		text, err := foreignText(spec.oid, format, val, spec.typ)
		if err != nil {
			return nil, err
		}
		v.AppendBytes(text)
		return v, nil
	}
	if format == 1 {
		return v, s.codec.AppendRecv(v, val)
	}
	return v, types.AppendParsedBytes(v, val)
}

// Portal returns the portal name.
func (s *Session) Portal(name string) (*Portal, error) {
	p, ok := s.portals[name]
	if !ok {
		return nil, pgerror.Newf(pgerror.InvalidCursorName, "portal \"%s\" does not exist", name)
	}
	return p, nil
}

// ClosePortal drops the portal name; closing one that does not exist is not
// an error.
func (s *Session) ClosePortal(name string) {
	if p, ok := s.portals[name]; ok {
		p.close()
		delete(s.portals, name)
	}
}

// dropPortals closes every portal but the cursors declared WITH HOLD: a
// transaction has ended.
func (s *Session) dropPortals() {
	for name, p := range s.portals {
		if !p.hold {
			p.close()
			delete(s.portals, name)
		}
	}
}

// Execute runs the portal name, or resumes it: at most maxRows rows are
// sent (0 is no limit), and suspended reports that the limit stopped it
// before its end, so a later Execute goes on. Rows go to w without a
// RowDescription (Describe sends that). Outside a transaction block the
// statement's transaction stays open until Sync.
func (s *Session) Execute(ctx context.Context, name string, maxRows int, w ResultWriter) (suspended bool, err error) {
	sctx, cancel := s.statementContext(ctx)
	defer cancel()
	suspended, err = s.execute(sctx, name, maxRows, w)
	err = statementError(sctx, err)
	if err != nil {
		if p, ok := s.portals[name]; ok {
			p.close()
		}
		s.abort()
		if !s.explicit {
			s.dropPortals()
		}
	}
	return suspended, err
}

func (s *Session) execute(ctx context.Context, name string, maxRows int, w ResultWriter) (bool, error) {
	p, err := s.Portal(name)
	if err != nil {
		return false, err
	}
	if p.stmt.stmt == nil {
		return false, w.WriteEmpty()
	}
	stmt := p.stmt.stmt.Stmt
	if p.done {
		// PostgreSQL answers a finished portal with an empty completion.
		return false, w.WriteComplete(completedTag(stmt))
	}
	if tx, ok := stmt.(*sql.TxStmt); ok {
		p.done = true
		return false, s.execTx(tx, w)
	}
	if s.explicit && s.failed {
		return false, errTxAborted
	}
	if sel, ok := stmt.(*sql.Select); ok {
		if !p.started {
			p.started = true
			node, err := sql.BindSelect(sql.WithParams(s.views(), p.params), sel)
			if err != nil {
				return false, err
			}
			// Checked at every Execute, not at Parse: a REVOKE since
			// holds for a statement prepared before it.
			if err := s.authorizeLocking(node, sel.Locking); err != nil {
				return false, err
			}
			if !sameColumns(columnsOf(node.Columns()), p.cols) {
				// The tables changed since the statement was described;
				// clients (pgx) prepare it again on this error.
				return false, pgerror.New(pgerror.FeatureNotSupported, "cached plan must not change result type")
			}
			if err := p.cur.open(s, ctx, s.plan(node)); err != nil {
				return false, err
			}
		}
		return p.run(ctx, maxRows, w)
	}
	if p.started {
		return p.run(ctx, maxRows, w)
	}
	p.started = true
	s.params = p.params
	defer func() { s.params = nil }()
	if maxRows <= 0 || len(p.cols) == 0 {
		p.done = true
		return false, s.execOne(ctx, *p.stmt.stmt, w)
	}
	// A statement that returns rows other than a query (INSERT ...
	// RETURNING, SHOW) runs to its end; its rows are kept and sent in
	// pieces, as PostgreSQL keeps them in a tuplestore.
	m := &materializer{}
	if err := s.execOne(ctx, *p.stmt.stmt, m); err != nil {
		return false, err
	}
	p.cur.openMaterialized(m.rows, m.tag)
	return p.run(ctx, maxRows, w)
}

// sameColumns reports whether a statement still returns the columns it
// was described with (an untyped column is described as text).
func sameColumns(got, described []Column) bool {
	if len(got) != len(described) {
		return false
	}
	for i, c := range got {
		t := c.Type
		if t.Kind == types.Unknown {
			t = types.TypText
		}
		if !t.Equal(described[i].Type) {
			return false
		}
	}
	return true
}

// completedTag is the tag of a portal executed again after its end.
func completedTag(stmt sql.Stmt) string {
	switch stmt.(type) {
	case *sql.Select:
		return "SELECT 0"
	case *sql.Insert:
		return "INSERT 0 0"
	case *sql.Update:
		return "UPDATE 0"
	case *sql.Delete:
		return "DELETE 0"
	}
	return ""
}

// Sync ends a run of extended-protocol messages: outside a transaction
// block, the implicit transaction commits and the portals close.
func (s *Session) Sync() error {
	if s.explicit {
		return nil
	}
	s.dropPortals()
	if s.txn != nil {
		txn := s.txn
		s.txn = nil
		if err := txn.Commit(); err != nil {
			s.endSettings(false)
			return err
		}
	}
	s.endSettings(true)
	return nil
}

// isTxExit reports whether stmt ends a transaction block (COMMIT,
// ROLLBACK): the only statements a failed block accepts.
func isTxExit(stmt *sql.Parsed) bool {
	if stmt == nil {
		return false
	}
	tx, ok := stmt.Stmt.(*sql.TxStmt)
	return ok && tx.Kind != sql.TxBegin
}

var errTxAborted = pgerror.New(pgerror.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")

func (p *Portal) close() {
	p.cur.close()
	p.done = true
}

// run sends up to maxRows rows of the portal (0: all that are left), then
// its completion, or reports that the limit suspended it.
func (p *Portal) run(ctx context.Context, maxRows int, w ResultWriter) (suspended bool, err error) {
	if err := w.WriteColumns(p.cols); err != nil {
		return false, err
	}
	sent, err := p.cur.fetch(ctx, maxRows, w, false)
	if err != nil {
		return false, err
	}
	if maxRows > 0 && sent == maxRows {
		return true, nil
	}
	p.done = true
	tag := "SELECT " + strconv.Itoa(sent)
	if p.cur.tag != "" {
		tag = p.cur.tag
	}
	p.cur.close()
	return false, w.WriteComplete(tag)
}

// materializer is a ResultWriter that keeps a statement's rows and tag.
type materializer struct {
	rows *types.Batch
	tag  string
}

func (m *materializer) WriteColumns(cols []Column) error {
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	m.rows = types.NewBatch(ts, 0)
	return nil
}

func (m *materializer) WriteBatch(b *types.Batch) error {
	for i, v := range b.Cols {
		m.rows.Cols[i].AppendVec(v)
	}
	return nil
}

func (m *materializer) WriteComplete(tag string) error { m.tag = tag; return nil }
func (m *materializer) WriteEmpty() error              { return nil }

func (m *materializer) CopyIn(bool, int) (io.Reader, error) {
	return nil, pgerror.AssertionFailedf("COPY in a materialized portal")
}

func (m *materializer) CopyOut(bool, int) (io.Writer, error) {
	return nil, pgerror.AssertionFailedf("COPY in a materialized portal")
}

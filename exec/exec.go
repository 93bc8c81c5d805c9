// Package exec runs physical plans: vectorized operators that pass
// types.Batch values from storage scans up to the session, and the
// INSERT/UPDATE/DELETE writers.
package exec

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"time"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Env is what operators of one statement share.
type Env struct {
	Ctx context.Context
	DB  *storage.DB
	// Catalog is the session's database: the tables the system tables
	// show. nil: database postgres of DB.
	Catalog *storage.Catalog
	Txn     *storage.Txn
	r       *rand.Rand
	// User and Database name the session's role and database; Setting
	// returns a run-time parameter's value (current_setting, pg_settings).
	User     string
	Database string
	// Role is the current role (SET ROLE) when it is not User; Auth
	// returns the roles as privileges are decided for this session (nil:
	// the stored ones), for the has_*_privilege functions.
	Role    string
	Auth    func() (*storage.Auth, error)
	Setting func(name string) (string, bool)
	// View returns the table (or branch, or version: "t@ref") a statement
	// naming name reads, as the session binds names; nil: Catalog's
	// table.
	View func(name string) (*storage.TableDesc, error)
	// SetConfig sets a run-time parameter as SET (or SET LOCAL, or RESET
	// for a nil value) does and returns its new value (set_config); nil:
	// parameters cannot be set.
	SetConfig func(name string, value *string, local bool) (string, error)
	// Settings lists every run-time parameter (pg_settings).
	Settings func() []SettingRow
	// TempFile makes a temporary file for work that outgrows memory (an
	// exact shuffle of a query's rows); nil: DB.TempFile, or none without
	// a DB.
	TempFile func(pattern string) (*os.File, error)
	// Now is the transaction's start, which now() and current_date read,
	// and StmtNow the statement's (statement_timestamp()); zero: the time
	// each call is first evaluated.
	Now, StmtNow time.Time
	// Mem is the monitor the statement's operators reserve the memory
	// they hold from (the session's); nil: no limit.
	Mem *MemMonitor
	// Instruments, for EXPLAIN ANALYZE, measure every operator Build
	// makes; nil: operators run bare, as every other statement's do.
	Instruments *Instruments

	// params is the stack of argument values of the subqueries being run;
	// a Param reads the top one.
	params [][]*types.Vec
	// cat is the catalog as this statement's system tables show it.
	cat *sysCatalog
	// work holds each running RecursiveUnion's working table, by ID.
	work map[int]*types.Batch
	// subAcc holds the rows subqueries keep (IN lists, ARRAY(...)) until
	// the statement ends (Close).
	subAcc *MemAccount
	// owned are the accounts of expressions (checkValue), given back by
	// Close.
	owned []*MemAccount
	// morsels, while a Gather builds a worker's pipeline, gives the
	// worker's scan of morselScan its row groups.
	morsels    *morsels
	morselScan *plan.Scan
	// sharedBuilds, while a Gather builds its workers' pipelines, holds
	// the hash table each join with plan.Join.SharedBuild shares among
	// them.
	sharedBuilds map[*plan.Join]*sharedBuild
}

// Close gives back the memory the statement's expressions still hold
// (its operators give theirs back when closed). Call it when the
// statement, or the cursor running it, is done.
func (e *Env) Close() {
	if e == nil {
		return
	}
	e.subAcc.Close()
	e.subAcc = nil
	for _, a := range e.owned {
		a.Close()
	}
	e.owned = nil
}

func (e *Env) rng() *rand.Rand {
	if e.r == nil {
		e.r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return e.r
}

// tempFile returns the function that makes the statement's temporary
// files, or nil when it has none.
func (e *Env) tempFile(pattern string) func() (*os.File, error) {
	switch {
	case e.TempFile != nil:
		return func() (*os.File, error) { return e.TempFile(pattern) }
	case e.DB != nil:
		return func() (*os.File, error) { return e.DB.TempFile(pattern) }
	}
	return nil
}

func (e *Env) canceled() error {
	if e.Ctx == nil {
		return nil
	}
	if err := e.Ctx.Err(); err != nil {
		return pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
	}
	return nil
}

// SettingRow is one run-time parameter as pg_settings shows it.
type SettingRow struct {
	Name, Value, Desc, Context, Default string
}

// Operator produces batches. The batch returned by Next is borrowed: valid
// until the next call to Next or Close. Next returns nil at the end.
type Operator interface {
	Next() (*types.Batch, error)
	Close()
}

// Build returns the operator tree for a query plan node. With
// env.Instruments each operator of the tree is measured for the plan node
// it was built for.
func Build(env *Env, n plan.Node) (Operator, error) {
	op, err := build(env, n)
	if err != nil || env.Instruments == nil {
		return op, err
	}
	return env.Instruments.wrap(n, op), nil
}

func build(env *Env, n plan.Node) (Operator, error) {
	switch n := n.(type) {
	case *plan.Scan:
		if n == env.morselScan {
			return newMorselScan(env, n)
		}
		return newScan(env, n)
	case *plan.Gather:
		return newGather(env, n)
	case *plan.Values:
		return newValues(env, n)
	case *plan.Join:
		return newJoin(env, n)
	case *plan.LateralJoin:
		return newLateralJoin(env, n)
	case *plan.Append:
		return newAppend(env, n)
	case *plan.SetOp:
		return newSetOp(env, n)
	case *plan.RecursiveUnion:
		return newRecursiveUnion(env, n)
	case *plan.Materialize:
		in, err := Build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return &materializeOp{in: in, cols: n.Columns()}, nil
	case *plan.WorkTable:
		return newWorkTable(env, n)
	case *plan.Series:
		return newSeries(env, n)
	case *plan.History:
		return newHistory(env, n)
	case *plan.ProjectSet:
		return newProjectSet(env, n)
	case *plan.SysScan:
		return newSysScan(env, n)
	case *plan.Filter:
		in, err := Build(env, n.Input)
		if err != nil {
			return nil, err
		}
		pred, err := env.compile(n.Pred)
		if err != nil {
			in.Close()
			return nil, err
		}
		return &filterOp{env: env, in: in, pred: pred}, nil
	case *plan.Project:
		in, err := Build(env, n.Input)
		if err != nil {
			return nil, err
		}
		p := &projectOp{in: in}
		for _, e := range n.Exprs {
			ev, err := env.compile(e)
			if err != nil {
				in.Close()
				return nil, err
			}
			p.exprs = append(p.exprs, ev)
		}
		p.out.Cols = make([]*types.Vec, len(n.Exprs))
		return p, nil
	case *plan.Aggregate:
		return newAggregate(env, n)
	case *plan.Window:
		return newWindow(env, n)
	case *plan.Sort:
		return newSort(env, n)
	case *plan.PartitionTopK:
		return newPartitionTopK(env, n)
	case *plan.Limit:
		return newLimit(env, n)
	case *plan.VectorTopK:
		return newVectorTopK(env, n)
	}
	return nil, pgerror.AssertionFailedf("no operator for %T", n)
}

// Drain runs op to the end, calling fn for every batch.
func Drain(op Operator, fn func(*types.Batch) error) error {
	for {
		b, err := op.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		if b.Len() == 0 {
			continue
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// selectRows appends the indexes of rows where pred is true.
func selectRows(dst []int, pred *types.Vec, n int) []int {
	bs := boolBytes(pred.Bools[:n])
	if c := bytes.Count(bs, []byte{1}); c < n/16 {
		// Few rows pass (a selective filter): jump from one to the next.
		for i := 0; ; i++ {
			j := bytes.IndexByte(bs[i:], 1)
			if j < 0 {
				return dst
			}
			i += j
			if !pred.Nulls[i] {
				dst = append(dst, i)
			}
		}
	}
	for i := 0; i < n; i++ {
		if !pred.Nulls[i] && pred.Bools[i] {
			dst = append(dst, i)
		}
	}
	return dst
}

// boolBytes views b as bytes (each 0 or 1), for the byte-searching
// routines.
func boolBytes(b []bool) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// anyTrue reports whether b holds a true value.
func anyTrue(b []bool) bool { return bytes.IndexByte(boolBytes(b), 1) >= 0 }

type scanOp struct {
	env    *Env
	sc     *storage.Scanner
	filter evaluator
	rows   []int
	sub    gatherer
	ids    []uint64
}

func newScan(env *Env, n *plan.Scan) (*scanOp, error) {
	s := &scanOp{env: env}
	if n.Filter != nil {
		f, err := env.compile(n.Filter)
		if err != nil {
			return nil, err
		}
		s.filter = f
	}
	sc, err := env.Txn.ScanWith(n.Table, storage.ScanOptions{Cols: n.Cols, Preds: n.ZonePreds(), Borrow: n.Borrow, Hollow: n.Hollow})
	if err != nil {
		return nil, err
	}
	s.sc = sc
	return s, nil
}

func (s *scanOp) Next() (*types.Batch, error) {
	for {
		if err := s.env.canceled(); err != nil {
			return nil, err
		}
		b, ids, err := s.sc.Next()
		if err != nil || b == nil {
			return nil, err
		}
		s.ids = ids
		if s.filter == nil {
			return b, nil
		}
		pred, err := s.filter.eval(b)
		if err != nil {
			return nil, err
		}
		s.rows = selectRows(s.rows[:0], pred, b.Len())
		switch len(s.rows) {
		case 0:
			continue
		case b.Len():
			return b, nil
		}
		// Keep row ids in step with the surviving rows.
		kept := s.ids[:0]
		for _, r := range s.rows {
			kept = append(kept, ids[r])
		}
		s.ids = kept
		return s.sub.gather(b, s.rows), nil
	}
}

func (s *scanOp) Close() { s.sc.Close() }

type filterOp struct {
	env  *Env
	in   Operator
	pred evaluator
	rows []int
	sub  gatherer
}

func (f *filterOp) Next() (*types.Batch, error) {
	for {
		b, err := f.in.Next()
		if err != nil || b == nil {
			return nil, err
		}
		pred, err := f.pred.eval(b)
		if err != nil {
			return nil, err
		}
		f.rows = selectRows(f.rows[:0], pred, b.Len())
		switch len(f.rows) {
		case 0:
			continue
		case b.Len():
			return b, nil
		}
		return f.sub.gather(b, f.rows), nil
	}
}

func (f *filterOp) Close() { f.in.Close() }

type projectOp struct {
	in    Operator
	exprs []evaluator
	out   types.Batch
}

func (p *projectOp) Next() (*types.Batch, error) {
	b, err := p.in.Next()
	if err != nil || b == nil {
		return nil, err
	}
	for i, e := range p.exprs {
		v, err := e.eval(b)
		if err != nil {
			return nil, err
		}
		p.out.Cols[i] = v
	}
	p.out.SetLen(b.Len())
	return &p.out, nil
}

func (p *projectOp) Close() { p.in.Close() }

// valuesOp produces the rows of a VALUES list (or the single empty row of
// SELECT without FROM) as one batch.
type valuesOp struct {
	out  *types.Batch
	done bool
}

func newValues(env *Env, n *plan.Values) (*valuesOp, error) {
	cols := n.Columns()
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	out := types.NewBatch(ts, len(n.Rows))
	for _, row := range n.Rows {
		for i, e := range row {
			if err := env.appendValue(out.Cols[i], e); err != nil {
				return nil, err
			}
		}
	}
	out.SetLen(len(n.Rows))
	return &valuesOp{out: out}, nil
}

// appendValue evaluates a row-independent expression and appends its value
// to dst. Literals parse straight into dst without building an evaluator.
func (e *Env) appendValue(dst *types.Vec, x plan.Expr) error {
	switch x := x.(type) {
	case *plan.Const:
		if x.Null {
			dst.AppendNull()
		} else {
			dst.AppendFrom(x.Val, 0)
		}
		return nil
	case *plan.Cast:
		if c, ok := x.X.(*plan.Const); ok && (c.Typ.Kind == types.Unknown || c.Typ.IsTextual()) && !dst.Type.IsTextual() {
			if c.Null {
				dst.AppendNull()
				return nil
			}
			return types.AppendParsed(dst, string(c.Val.GetBytes(0)))
		}
	}
	ev, err := e.compileNoFold(x)
	if err != nil {
		return err
	}
	v, err := ev.eval(oneRow)
	if err != nil {
		return err
	}
	dst.AppendFrom(v, 0)
	return nil
}

func (v *valuesOp) Next() (*types.Batch, error) {
	if v.done {
		return nil, nil
	}
	v.done = true
	return v.out, nil
}

func (v *valuesOp) Close() {}

package exec

import (
	"slices"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// DMLResult is what a write statement reports: the affected row count and,
// with RETURNING, the returned rows.
type DMLResult struct {
	Count     int64
	Returning *types.Batch
}

// RunInsert executes an INSERT.
func RunInsert(env *Env, n *plan.Insert) (*DMLResult, error) {
	in, err := Build(env, n.Input)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	res := &DMLResult{}
	err = Drain(in, func(b *types.Batch) error {
		if err := checkNotNull(n.Table, b); err != nil {
			return err
		}
		if err := env.Txn.Insert(n.Table, b); err != nil {
			return err
		}
		res.Count += int64(b.Len())
		return returning(env, n.Returning, b, res)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// RunUpdate executes an UPDATE: matching rows are read in full first, then
// deleted and re-inserted with their new values in the same transaction.
func RunUpdate(env *Env, n *plan.Update) (*DMLResult, error) {
	ids, old, err := matchRows(env, n.Table, n.Where)
	if err != nil {
		return nil, err
	}
	res := &DMLResult{Count: int64(len(ids))}
	if len(ids) == 0 {
		return res, returning(env, n.Returning, emptyBatch(n.Table), res)
	}
	newRows := emptyBatch(n.Table)
	for i, e := range n.Set {
		ev, err := env.compile(e)
		if err != nil {
			return nil, err
		}
		v, err := ev.eval(old)
		if err != nil {
			return nil, err
		}
		newRows.Cols[i].AppendVec(v)
	}
	if err := checkNotNull(n.Table, newRows); err != nil {
		return nil, err
	}
	if err := env.Txn.DeleteRows(n.Table, ids, old); err != nil {
		return nil, err
	}
	if err := env.Txn.Insert(n.Table, newRows); err != nil {
		return nil, err
	}
	return res, returning(env, n.Returning, newRows, res)
}

// RunDelete executes a DELETE.
func RunDelete(env *Env, n *plan.Delete) (*DMLResult, error) {
	ids, old, err := matchRows(env, n.Table, n.Where)
	if err != nil {
		return nil, err
	}
	res := &DMLResult{Count: int64(len(ids))}
	if len(ids) > 0 {
		if err := env.Txn.DeleteRows(n.Table, ids, old); err != nil {
			return nil, err
		}
	}
	return res, returning(env, n.Returning, old, res)
}

func emptyBatch(t *storage.TableDesc) *types.Batch {
	ts := make([]types.Type, len(t.Columns))
	for i, c := range t.Columns {
		ts[i] = c.Type
	}
	return types.NewBatch(ts, 0)
}

// matchRows scans every column of t and returns the ids and values of the
// rows where is true (all rows when where is nil). where reads the columns
// and then the system column _rowid.
func matchRows(env *Env, t *storage.TableDesc, where plan.Expr) ([]uint64, *types.Batch, error) {
	cols := make([]int, len(t.Columns)+1)
	for i := range cols {
		cols[i] = i // the last: storage.RowIDColumn(t)
	}
	s, err := newScan(env, &plan.Scan{Table: t, Cols: cols, Filter: where})
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var ids []uint64
	all := emptyBatch(t)
	err = Drain(s, func(b *types.Batch) error {
		ids = append(ids, s.ids...)
		for i, c := range all.Cols {
			c.AppendVec(b.Cols[i])
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, all, nil
}

func returning(env *Env, exprs []plan.Expr, rows *types.Batch, res *DMLResult) error {
	if len(exprs) == 0 {
		return nil
	}
	if res.Returning == nil {
		ts := make([]types.Type, len(exprs))
		for i, e := range exprs {
			ts[i] = e.Type()
		}
		res.Returning = types.NewBatch(ts, rows.Len())
	}
	if rows.Len() == 0 {
		return nil
	}
	for i, e := range exprs {
		ev, err := env.compile(e)
		if err != nil {
			return err
		}
		v, err := ev.eval(rows)
		if err != nil {
			return err
		}
		res.Returning.Cols[i].AppendVec(v)
	}
	return nil
}

// checkNotNull enforces NOT NULL (and primary key) columns.
func checkNotNull(t *storage.TableDesc, b *types.Batch) error {
	_, err := notNullViolation(t, b)
	return err
}

// notNullViolation returns the first row of b with a NULL in a NOT NULL
// column, and its 23502 error; nil if there is none.
func notNullViolation(t *storage.TableDesc, b *types.Batch) (row int, err error) {
	if !slices.ContainsFunc(t.Columns, func(c storage.ColumnDesc) bool { return c.NotNull }) {
		return 0, nil
	}
	for r := 0; r < b.Len(); r++ {
		for i, c := range t.Columns {
			if c.NotNull && b.Cols[i].Nulls[r] {
				return r, pgerror.Newf(pgerror.NotNullViolation, "null value in column \"%s\" of relation \"%s\" violates not-null constraint", c.Name, t.Name).
					WithDetail("Failing row contains (%s).", rowText(b, r))
			}
		}
	}
	return 0, nil
}

func rowText(b *types.Batch, r int) string {
	var sb strings.Builder
	var buf []byte
	for i, c := range b.Cols {
		if i > 0 {
			sb.WriteString(", ")
		}
		if c.Nulls[r] {
			sb.WriteString("null")
			continue
		}
		buf = types.AppendText(buf[:0], c, r)
		sb.Write(buf)
	}
	return sb.String()
}

package exec

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// sysScanOp returns the rows of a system table, generated from the catalog
// when the scan starts, as one batch.
type sysScanOp struct {
	out  *types.Batch
	done bool
}

func newSysScan(env *Env, n *plan.SysScan) (Operator, error) {
	gen := sysTableRows[n.Table.Schema+"."+n.Table.Name]
	ts := make([]types.Type, len(n.Table.Cols))
	for i, c := range n.Table.Cols {
		ts[i] = c.Type
	}
	all := types.NewBatch(ts, 16)
	c, err := env.catalog()
	if err != nil {
		return nil, err
	}
	if gen != nil {
		gen(env, c, &sysRows{b: all})
	}
	out := &types.Batch{Cols: make([]*types.Vec, len(n.Cols))}
	for i, c := range n.Cols {
		if c == len(n.Table.Cols) {
			// tableoid: the table's own OID on every row.
			v := types.NewVec(types.Type{Kind: types.Oid}, all.Len())
			for r := 0; r < all.Len(); r++ {
				v.AppendInt(int64(n.Table.OID))
			}
			out.Cols[i] = v
			continue
		}
		out.Cols[i] = all.Cols[c]
	}
	out.SetLen(all.Len())
	return &sysScanOp{out: out}, nil
}

func (s *sysScanOp) Next() (*types.Batch, error) {
	if s.done {
		return nil, nil
	}
	s.done = true
	return s.out, nil
}

func (s *sysScanOp) Close() {}

// sysRows appends rows to a system table's batch.
type sysRows struct{ b *types.Batch }

// row appends one row; values are int64, int, uint32, string, bool, or nil
// for NULL, in column order.
func (r *sysRows) row(vals ...any) {
	for i, v := range vals {
		c := r.b.Cols[i]
		switch v := v.(type) {
		case nil:
			c.AppendNull()
		case int64:
			c.AppendInt(v)
		case int:
			c.AppendInt(int64(v))
		case uint32:
			c.AppendInt(int64(v))
		case string:
			if c.Type.Kind == types.Tensor {
				// Array columns (pg_index.indkey) come as their text form.
				if err := types.AppendParsed(c, v); err != nil {
					c.AppendNull()
				}
				continue
			}
			c.AppendString(v)
		case bool:
			c.AppendBool(v)
		case float64:
			c.AppendFloat(v)
		}
	}
}

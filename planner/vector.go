package planner

import (
	"strings"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
)

// vectorTopK turns `ORDER BY col <op> constant LIMIT k` over one table,
// Limit(Sort(Project(Scan))) with the sort's single ascending key a
// distance between a column and a constant vector, into
// Limit(Project(VectorTopK(Scan))): a search that keeps the k nearest rows
// instead of sorting them all, and reads only the vector and filter
// columns until it knows which rows those are.
func vectorTopK(n plan.Node) plan.Node {
	lim, ok := n.(*plan.Limit)
	if !ok || lim.Count == nil {
		return n
	}
	srt, ok := lim.Input.(*plan.Sort)
	if !ok || len(srt.Keys) != 1 || srt.Keys[0].Desc || srt.Keys[0].NullsFirst {
		return n
	}
	proj, ok := srt.Input.(*plan.Project)
	if !ok {
		return n
	}
	scan, ok := proj.Input.(*plan.Scan)
	if !ok || hasSubquery(scan.Filter) {
		return n
	}
	call, ok := proj.Exprs[srt.Keys[0].Col].(*plan.Call)
	if !ok || !call.Op.IsDistance() {
		return n
	}
	col, q := call.Args[0], call.Args[1]
	if _, ok := col.(*plan.ColRef); !ok {
		// The distances are symmetric.
		col, q = q, col
	}
	ref, ok := col.(*plan.ColRef)
	if !ok || !isConstant(q) {
		return n
	}
	search, remap := narrow(scan, []plan.Expr{ref})
	// The search outputs the sort key itself, after the columns the rest
	// of the projection reads: only those are fetched for the rows found.
	key := srt.Keys[0].Col
	var rest []plan.Expr
	for i, e := range proj.Exprs {
		if i != key {
			rest = append(rest, e)
		}
	}
	bare := *scan
	bare.Filter = nil
	fetch, fremap := narrow(&bare, rest)
	vt := &plan.VectorTopK{Scan: fetch, Search: search, SearchCol: remap[ref.Idx], Op: call.Op, Query: q,
		Count: lim.Count, Offset: lim.Offset, Dist: call.Type()}
	vt.Index = indexFor(scan.Table, search.Cols[vt.SearchCol], call.Op)
	if scan.Filter != nil {
		vt.FilterScan, _ = narrow(scan, nil)
	}
	p := *proj
	p.Exprs = make([]plan.Expr, len(proj.Exprs))
	for i, e := range proj.Exprs {
		if i == key {
			p.Exprs[i] = &plan.ColRef{Idx: len(fetch.Cols), Typ: call.Type(), Name: "distance"}
		} else {
			p.Exprs[i] = Remap(e, fremap)
		}
	}
	p.Input = vt
	l := *lim
	l.Input = &p
	return &l
}

// isConstant reports whether e reads no column and nothing volatile:
// constants, parameters and casts or calls over them.
func isConstant(e plan.Expr) bool {
	switch e := e.(type) {
	case *plan.Const:
		return true
	case *plan.Cast:
		return isConstant(e.X)
	case *plan.Call:
		if e.Op.Volatile() {
			return false
		}
		for _, a := range e.Args {
			if !isConstant(a) {
				return false
			}
		}
		return true
	}
	return false
}

// opClassOps maps the suffix of a vector operator class to the distance
// it orders by.
var opClassOps = map[string]plan.Op{
	"_l2_ops": plan.OpL2Distance, "_ip_ops": plan.OpNegInnerProduct,
	"_cosine_ops": plan.OpCosineDistance, "_l1_ops": plan.OpL1Distance,
}

// indexFor returns a vector index of t on column col whose operator class
// orders by op, or nil.
func indexFor(t *storage.TableDesc, col int, op plan.Op) *storage.IndexDesc {
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if ix.Column != col {
			continue
		}
		for suffix, o := range opClassOps {
			if o == op && strings.HasSuffix(ix.OpClass, suffix) {
				return ix
			}
		}
	}
	return nil
}

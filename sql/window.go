package sql

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// WindowSpec is the OVER clause of a window function call, or the
// definition of a named window (WINDOW w AS (...)).
type WindowSpec struct {
	// Ref names the window this one starts from (OVER w, OVER (w ...)).
	Ref         string
	PartitionBy []Expr
	OrderBy     []OrderItem
	// WholeFrame is set for a frame of the whole partition (ROWS or RANGE
	// BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING).
	WholeFrame bool
}

// NamedWindow is one entry of a WINDOW clause.
type NamedWindow struct {
	Name string
	Spec *WindowSpec
}

// Frame options of PostgreSQL's WindowDef.
const (
	frameNonDefault       = 0x00001
	frameRange            = 0x00002
	frameRows             = 0x00004
	frameBetween          = 0x00010
	frameStartUnboundedPr = 0x00020
	frameEndUnboundedFoll = 0x00100
)

func convertWindowDef(w *pg.WindowDef) (*WindowSpec, error) {
	spec := &WindowSpec{Ref: w.Refname}
	if w.Name != "" && w.Refname == "" && len(w.PartitionClause) == 0 && len(w.OrderClause) == 0 && w.FrameOptions&frameNonDefault == 0 {
		// OVER w: the named window itself.
		spec.Ref = w.Name
	}
	var err error
	if spec.PartitionBy, err = convertExprs(w.PartitionClause); err != nil {
		return nil, err
	}
	if spec.OrderBy, err = convertSortClause(w.OrderClause); err != nil {
		return nil, err
	}
	if w.FrameOptions&frameNonDefault != 0 {
		const whole = frameBetween | frameStartUnboundedPr | frameEndUnboundedFoll
		opts := int(w.FrameOptions)
		if opts&^(frameNonDefault|frameRange|frameRows) != whole || opts&(frameRange|frameRows) == 0 {
			return nil, unsupported("window frames other than the default and UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")
		}
		spec.WholeFrame = true
	}
	return spec, nil
}

// convertSortClause converts ORDER BY items.
func convertSortClause(list []*pg.Node) ([]OrderItem, error) {
	var out []OrderItem
	for _, o := range list {
		sb := o.GetSortBy()
		if sb == nil {
			return nil, unsupported("this ORDER BY item")
		}
		if sb.SortbyDir == pg.SortByDir_SORTBY_USING {
			return nil, unsupported("ORDER BY ... USING")
		}
		e, err := convertExpr(sb.Node)
		if err != nil {
			return nil, err
		}
		item := OrderItem{Expr: e, Desc: sb.SortbyDir == pg.SortByDir_SORTBY_DESC}
		switch sb.SortbyNulls {
		case pg.SortByNulls_SORTBY_NULLS_FIRST:
			item.Nulls = 1
		case pg.SortByNulls_SORTBY_NULLS_LAST:
			item.Nulls = 2
		}
		out = append(out, item)
	}
	return out, nil
}

// convertWindowClause converts a SELECT's WINDOW clause.
func convertWindowClause(list []*pg.Node) ([]NamedWindow, error) {
	var out []NamedWindow
	for _, n := range list {
		w := n.GetWindowDef()
		if w == nil {
			return nil, unsupported("this WINDOW clause")
		}
		spec, err := convertWindowDef(w)
		if err != nil {
			return nil, err
		}
		if spec.Ref == w.Name {
			spec.Ref = ""
		}
		out = append(out, NamedWindow{Name: w.Name, Spec: spec})
	}
	return out, nil
}

// winContext collects the window function calls of a SELECT while its
// output expressions bind. Each call binds to a placeholder column; build
// then puts the windows between the query's input (or its aggregation)
// and its projection, and points the placeholders at their columns.
type winContext struct {
	named map[string]*WindowSpec
	// extras are the expressions the windows read (partition and order
	// keys, arguments), computed as columns after the input's.
	extras    []plan.Expr
	extraKeys []string
	specs     []*winSpec
}

// winSpec is one distinct window: its keys (as extras indexes) and calls.
type winSpec struct {
	key   string
	part  []int
	order []plan.SortKey
	whole bool
	calls []plan.WindowCall
	refs  []*plan.ColRef
}

func newWinContext(named []NamedWindow) (*winContext, error) {
	w := &winContext{named: make(map[string]*WindowSpec)}
	for _, nw := range named {
		if _, dup := w.named[nw.Name]; dup {
			return nil, pgerror.Newf(pgerror.Code("42P20"), "window \"%s\" is already defined", nw.Name)
		}
		w.named[nw.Name] = nw.Spec
	}
	return w, nil
}

// extra returns the extras index of e, adding it if new.
func (w *winContext) extra(e plan.Expr) int {
	k := e.String()
	for i, x := range w.extraKeys {
		if x == k && !containsRandom(e) {
			return i
		}
	}
	w.extras = append(w.extras, e)
	w.extraKeys = append(w.extraKeys, k)
	return len(w.extras) - 1
}

// windowFuncs maps the window functions that are not aggregates.
var windowFuncs = map[string]plan.WindowFunc{
	"row_number": plan.WinRowNumber, "rank": plan.WinRank, "dense_rank": plan.WinDenseRank,
	"percent_rank": plan.WinPercentRank, "cume_dist": plan.WinCumeDist, "ntile": plan.WinNtile,
	"lag": plan.WinLag, "lead": plan.WinLead, "first_value": plan.WinFirstValue, "last_value": plan.WinLastValue,
	"count": plan.WinCount, "sum": plan.WinSum, "avg": plan.WinAvg, "min": plan.WinMin, "max": plan.WinMax,
}

// windowCall binds f OVER (...).
func (b *binder) windowCall(f *FuncCall) (plan.Expr, error) {
	if b.win == nil {
		clause := b.noAgg
		if clause == "" {
			clause = "this context"
		}
		return nil, pgerror.Newf(pgerror.Code("42P20"), "window functions are not allowed in %s", clause)
	}
	w := b.win
	fn, ok := windowFuncs[f.Name]
	if !ok {
		return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s does not exist", f.Name).
			WithHint("No window function matches the given name and argument types.")
	}
	if f.Distinct {
		return nil, unsupported("DISTINCT in window functions")
	}
	spec, err := w.resolve(f.Over)
	if err != nil {
		return nil, err
	}
	inner := *b
	inner.win = nil
	args, err := inner.exprs(f.Args)
	if err != nil {
		return nil, err
	}
	call := plan.WindowCall{Func: fn, Arg: -1, Default: -1, Name: f.Name}
	nargs := len(args)
	want := func(lo, hi int) error {
		if nargs < lo || nargs > hi || (f.Star && fn != plan.WinCount) {
			return pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, nargs)
		}
		return nil
	}
	switch fn {
	case plan.WinRowNumber, plan.WinRank, plan.WinDenseRank:
		err = want(0, 0)
		call.Typ = types.TypInt8
	case plan.WinPercentRank, plan.WinCumeDist:
		err = want(0, 0)
		call.Typ = types.TypFloat8
	case plan.WinNtile:
		if err = want(1, 1); err == nil {
			call.Offset, err = constInt(args[0], "ntile")
		}
		call.Typ = types.TypInt4
	case plan.WinLag, plan.WinLead:
		if err = want(1, 3); err != nil {
			break
		}
		x := resolveUnknown(args[0])
		call.Typ = x.Type()
		call.Arg = w.extra(x)
		call.Offset = 1
		if nargs >= 2 {
			if call.Offset, err = constInt(args[1], f.Name); err != nil {
				break
			}
		}
		if nargs == 3 {
			d, derr := assignCast(args[2], call.Typ, f.Name)
			if derr != nil {
				return nil, derr
			}
			call.Default = w.extra(d)
		}
	case plan.WinFirstValue, plan.WinLastValue, plan.WinMin, plan.WinMax:
		if err = want(1, 1); err == nil {
			x := resolveUnknown(args[0])
			call.Typ = x.Type()
			call.Arg = w.extra(x)
		}
	case plan.WinCount:
		call.Typ = types.TypInt8
		if f.Star {
			err = want(0, 0)
		} else if err = want(1, 1); err == nil {
			call.Arg = w.extra(resolveUnknown(args[0]))
		}
	case plan.WinSum, plan.WinAvg:
		if err = want(1, 1); err != nil {
			break
		}
		x := args[0]
		if isUnknown(x) {
			x = castExpr(x, types.TypFloat8)
		}
		if !x.Type().IsNumeric() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, x.Type())
		}
		if k := x.Type().Kind; k == types.Float4 || k == types.Float8 {
			x = castExpr(x, types.TypFloat8)
		}
		var ok bool
		if call.Typ, ok = sumAvgType(x.Type(), fn == plan.WinAvg); !ok || x.Type().IsVector() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, x.Type())
		}
		call.Arg = w.extra(x)
	}
	if err != nil {
		return nil, err
	}

	// The window: partition keys, then order keys, as extras columns.
	var key strings.Builder
	var part []int
	for _, p := range spec.PartitionBy {
		x, err := inner.expr(p)
		if err != nil {
			return nil, err
		}
		i := w.extra(resolveUnknown(x))
		part = append(part, i)
		key.WriteString("p" + strconv.Itoa(i) + ",")
	}
	var order []plan.SortKey
	for _, o := range spec.OrderBy {
		x, err := inner.expr(o.Expr)
		if err != nil {
			return nil, err
		}
		x = resolveUnknown(x)
		if t := x.Type(); t.Kind == types.Tensor || t.Kind == types.JSON {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "could not identify an ordering operator for type %s", t)
		}
		sk := plan.SortKey{Col: w.extra(x), Desc: o.Desc, NullsFirst: o.Desc}
		if o.Nulls != 0 {
			sk.NullsFirst = o.Nulls == 1
		}
		order = append(order, sk)
		key.WriteString("o" + strconv.Itoa(sk.Col) + strconv.FormatBool(sk.Desc) + strconv.FormatBool(sk.NullsFirst) + ",")
	}
	key.WriteString(strconv.FormatBool(spec.WholeFrame))
	var ws *winSpec
	for _, s := range w.specs {
		if s.key == key.String() {
			ws = s
		}
	}
	if ws == nil {
		ws = &winSpec{key: key.String(), part: part, order: order, whole: spec.WholeFrame}
		w.specs = append(w.specs, ws)
	}
	ref := &plan.ColRef{Idx: -1, Typ: call.Typ, Name: f.Name}
	ws.calls = append(ws.calls, call)
	ws.refs = append(ws.refs, ref)
	return ref, nil
}

// resolve returns the window an OVER clause names or defines.
func (w *winContext) resolve(over *WindowSpec) (*WindowSpec, error) {
	if over.Ref == "" {
		return over, nil
	}
	base, ok := w.named[over.Ref]
	if !ok {
		return nil, pgerror.Newf(pgerror.UndefinedObject, "window \"%s\" does not exist", over.Ref)
	}
	if len(over.PartitionBy) > 0 {
		return nil, pgerror.Newf(pgerror.Code("42P20"), "cannot override PARTITION BY clause of window \"%s\"", over.Ref)
	}
	spec := *base
	if len(over.OrderBy) > 0 {
		if len(base.OrderBy) > 0 {
			return nil, pgerror.Newf(pgerror.Code("42P20"), "cannot override ORDER BY clause of window \"%s\"", over.Ref)
		}
		spec.OrderBy = over.OrderBy
	}
	spec.WholeFrame = spec.WholeFrame || over.WholeFrame
	return &spec, nil
}

// constInt returns the value of an integer constant argument.
func constInt(e plan.Expr, fn string) (int64, error) {
	c, ok := e.(*plan.Const)
	if !ok || c.Null || !c.Typ.IsInteger() {
		return 0, unsupported("a non-constant or non-integer " + fn + " argument")
	}
	return c.Val.Ints[0], nil
}

// used reports whether any window function was bound.
func (w *winContext) used() bool { return w != nil && len(w.specs) > 0 }

// build returns node with the windows on top: a projection adding the
// extras, then per window a sort by its keys and the Window operator. The
// placeholders of the calls are pointed at the calls' columns.
func (w *winContext) build(node plan.Node) plan.Node {
	cols := node.Columns()
	width := len(cols)
	pre := &plan.Project{Input: node}
	for i, c := range cols {
		pre.Exprs = append(pre.Exprs, &plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name})
		pre.Names = append(pre.Names, c.Name)
	}
	for _, e := range w.extras {
		pre.Exprs = append(pre.Exprs, e)
		pre.Names = append(pre.Names, "?window?")
	}
	var cur plan.Node = pre
	next := width + len(w.extras)
	for _, s := range w.specs {
		win := &plan.Window{WholeFrame: s.whole}
		var keys []plan.SortKey
		for _, p := range s.part {
			win.PartitionBy = append(win.PartitionBy, width+p)
			keys = append(keys, plan.SortKey{Col: width + p})
		}
		for _, o := range s.order {
			o.Col += width
			win.OrderBy = append(win.OrderBy, o)
			keys = append(keys, o)
		}
		if len(keys) > 0 {
			cur = &plan.Sort{Input: cur, Keys: keys}
		}
		for k, c := range s.calls {
			if c.Arg >= 0 {
				c.Arg += width
			}
			if c.Default >= 0 {
				c.Default += width
			}
			win.Calls = append(win.Calls, c)
			s.refs[k].Idx = next + k
		}
		win.Input = cur
		cur = win
		next += len(s.calls)
	}
	return cur
}

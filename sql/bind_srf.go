package sql

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// srfNames are the set-returning functions a select list may call.
var srfNames = map[string]plan.SRFKind{
	"unnest":              plan.SRFUnnest,
	"generate_subscripts": plan.SRFGenerateSubscripts,
	"_pg_expandarray":     plan.SRFExpandArray,
}

func containsSRF(e Expr) bool {
	found := false
	walk(e, func(x Expr) {
		if f, ok := x.(*FuncCall); ok {
			if _, srf := srfNames[f.Name]; srf {
				found = true
			}
		}
	})
	return found
}

// bindSRFs moves the set-returning calls of a select list into a
// ProjectSet over input: each call becomes a column of it, which the
// rewritten items read by name.
func bindSRFs(in *binder, input plan.Node, items []SelectItem) (plan.Node, []SelectItem, error) {
	ps := &plan.ProjectSet{Input: input}
	sc := *in.sc
	sc.names = append([]string{}, sc.names...)
	sc.types = append([]types.Type{}, sc.types...)
	sc.ordinal = append([]int{}, sc.ordinal...)
	if sc.rels != nil {
		sc.rels = append([]string{}, sc.rels...)
	}
	if sc.hidden != nil {
		sc.hidden = append([]bool{}, sc.hidden...)
	}
	if sc.star == nil {
		sc.star = sc.starCols("")
	}
	keys := map[string]string{}
	var rewrite func(e Expr) (Expr, error)
	rewrite = func(e Expr) (Expr, error) {
		var err error
		switch x := e.(type) {
		case *FuncCall:
			kind, ok := srfNames[x.Name]
			if !ok {
				c := *x
				c.Args = make([]Expr, len(x.Args))
				for i, a := range x.Args {
					if c.Args[i], err = rewrite(a); err != nil {
						return nil, err
					}
				}
				return &c, nil
			}
			want := 1
			if kind == plan.SRFGenerateSubscripts {
				want = 2
			}
			if len(x.Args) != want {
				return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", x.Name, len(x.Args))
			}
			arg, err := in.expr(x.Args[0])
			if err != nil {
				return nil, err
			}
			arg = resolveUnknown(arg)
			at := arg.Type()
			if at.Kind != types.Tensor && !at.IsTextual() {
				return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", x.Name, at)
			}
			if want == 2 {
				if l, ok := x.Args[1].(*Literal); !ok || l.Kind != LitInt || l.Text != "1" {
					return nil, unsupported("generate_subscripts over a dimension other than 1")
				}
			}
			f := plan.SRF{Kind: kind, Arg: arg, Typ: types.TypInt4}
			switch {
			case kind == plan.SRFExpandArray:
				f.Typ = types.TypText
			case kind == plan.SRFUnnest && at.Kind == types.Tensor:
				if f.Typ, err = types.SubscriptType(at, len(at.Shape)); err != nil {
					return nil, err
				}
			case kind == plan.SRFUnnest:
				f.Typ = types.TypText
			}
			key := x.Name + "(" + arg.String() + ")"
			name, seen := keys[key]
			if !seen {
				name = "?srf" + itoa(int64(len(ps.SRFs))) + "?"
				keys[key] = name
				ps.SRFs = append(ps.SRFs, f)
				sc.names = append(sc.names, name)
				sc.types = append(sc.types, f.Typ)
				sc.ordinal = append(sc.ordinal, -1)
				if sc.rels != nil {
					sc.rels = append(sc.rels, "")
				}
				if sc.hidden != nil {
					sc.hidden = append(sc.hidden, false)
				}
			}
			return &ColumnRef{Name: name}, nil
		case *FieldSelect:
			c := *x
			c.X, err = rewrite(x.X)
			return &c, err
		case *CastExpr:
			c := *x
			c.X, err = rewrite(x.X)
			return &c, err
		case *BinaryExpr:
			c := *x
			if c.L, err = rewrite(x.L); err != nil {
				return nil, err
			}
			c.R, err = rewrite(x.R)
			return &c, err
		}
		if containsSRF(e) {
			return nil, unsupported("set-returning functions in this position")
		}
		return e, nil
	}
	out := make([]SelectItem, len(items))
	for i, it := range items {
		out[i] = it
		if !containsSRF(it.Expr) {
			continue
		}
		e, err := rewrite(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		out[i].Expr = e
		if out[i].Alias == "" {
			out[i].Alias = exprName(it.Expr)
		}
	}
	in.sc = &sc
	return ps, out, nil
}

// fieldSelect binds (X).field. The only composite values are
// _pg_expandarray's (x, n) pairs, held as the text "(x,n)".
func (b *binder) fieldSelect(e *FieldSelect) (plan.Expr, error) {
	x, err := b.expr(e.X)
	if err != nil {
		return nil, err
	}
	idx := -1
	switch e.Field {
	case "x":
		idx = 0
	case "n":
		idx = 1
	}
	if !x.Type().IsTextual() || idx < 0 {
		return nil, pgerror.Newf(pgerror.UndefinedColumn, "could not identify column \"%s\" in record data type", e.Field)
	}
	return &plan.Func{Name: "record_field", Args: []plan.Expr{x, plan.IntConst(types.TypInt4, int64(idx))}, Typ: types.TypInt4}, nil
}

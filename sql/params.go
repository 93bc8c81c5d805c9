package sql

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// Params are the $n parameters of a statement of the extended query
// protocol. A statement binds twice: when it is described, Values is nil
// and each $n binds to a placeholder whose type binding infers from where
// it is used (WHERE id = $1 gives $1 the type of id); when it runs, each $n
// binds to its value, a constant of the type the first binding settled.
type Params struct {
	// Types holds each parameter's type: the client's declared type,
	// Unknown for one to infer.
	Types []types.Type
	// Values holds each parameter's value as a one-row Vec, or is nil
	// while the statement is only described. A value of Unknown type is
	// text that binding converts as it would a quoted literal.
	Values []*types.Vec

	infos []*plan.ParamInfo
}

// NewParams returns the parameters of a statement with the given declared
// types (Unknown where the client left a type to infer).
func NewParams(declared []types.Type) *Params {
	return &Params{Types: declared}
}

// WithParams returns a Catalog that binds $n from p; binding a statement
// that holds $n needs one.
func WithParams(cat Catalog, p *Params) Catalog { return &paramCatalog{Catalog: cat, params: p} }

// paramCatalog carries a statement's parameters through binding.
type paramCatalog struct {
	Catalog
	params *Params
}

func paramsOf(cat Catalog) *Params {
	if pc, ok := cat.(*paramCatalog); ok {
		return pc.params
	}
	return nil
}

// Resolve ends the describing bind: a parameter binding left untyped is
// text, as PostgreSQL resolves an unknown; one the statement never uses
// and the client did not declare is an error.
func (p *Params) Resolve() error {
	for i := range p.Types {
		if i < len(p.infos) && p.infos[i] != nil {
			p.Types[i] = p.infos[i].Type
		}
		if p.Types[i].Kind != types.Unknown {
			continue
		}
		if i >= len(p.infos) || p.infos[i] == nil {
			return pgerror.Newf(pgerror.IndeterminateDatatype, "could not determine data type of parameter $%d", i+1)
		}
		p.Types[i] = types.TypText
	}
	return nil
}

// param binds $n: to its value when the statement runs, or to a
// placeholder while it is described.
func (b *binder) param(e *Param) (plan.Expr, error) {
	p := paramsOf(b.cat)
	if p == nil || e.N < 1 || e.N > len(p.Types) && p.Values != nil {
		return nil, pgerror.Newf(pgerror.UndefinedParameter, "there is no parameter $%d", e.N)
	}
	if p.Values != nil {
		v := p.Values[e.N-1]
		if v.Nulls[0] {
			return plan.NullConst(v.Type), nil
		}
		return &plan.Const{Typ: v.Type, Val: v}, nil
	}
	// NB: while describing, PostgreSQL lets a statement use more
	// parameters than the client declared; the rest are inferred.
	for len(p.Types) < e.N {
		p.Types = append(p.Types, types.TypUnknown)
	}
	for len(p.infos) < e.N {
		p.infos = append(p.infos, nil)
	}
	info := p.infos[e.N-1]
	if info == nil {
		info = &plan.ParamInfo{N: e.N, Type: p.Types[e.N-1]}
		p.infos[e.N-1] = info
	}
	return &plan.Const{Typ: info.Type, Null: true, Param: info}, nil
}

// inferParam gives an untyped parameter placeholder the type t: the first
// context that needs a type decides it.
func inferParam(c *plan.Const, t types.Type) *plan.Const {
	if c.Param.Type.Kind == types.Unknown {
		c.Param.Type = t
	}
	return &plan.Const{Typ: t, Null: true, Param: c.Param}
}

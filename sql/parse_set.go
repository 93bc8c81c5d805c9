package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// convertSet converts SET, SET LOCAL, SET ... TO DEFAULT, SET TIME ZONE,
// SET NAMES, RESET and RESET ALL. The grammar already maps the special
// spellings onto parameter names (SET TIME ZONE is timezone, SET NAMES is
// client_encoding). Values stay text: the session checks them against the
// parameter they are for.
func convertSet(v *pg.VariableSetStmt) (Stmt, error) {
	sv := &SetVar{Name: strings.ToLower(v.Name), Local: v.IsLocal, Tag: "SET"}
	switch v.Kind {
	case pg.VariableSetKind_VAR_SET_VALUE:
		for _, a := range v.Args {
			arg, ok := setArg(a)
			if !ok {
				if sv.Name == "timezone" {
					return nil, unsupported("SET TIME ZONE INTERVAL")
				}
				return nil, unsupported("this value of SET " + sv.Name)
			}
			sv.Args = append(sv.Args, arg)
		}
	case pg.VariableSetKind_VAR_SET_DEFAULT:
		sv.Reset = true
	case pg.VariableSetKind_VAR_RESET:
		sv.Reset, sv.Tag = true, "RESET"
	case pg.VariableSetKind_VAR_RESET_ALL:
		sv.Name, sv.Reset, sv.Tag = "", true, "RESET"
	case pg.VariableSetKind_VAR_SET_MULTI:
		return convertSetMulti(v)
	default:
		return nil, unsupported("this form of SET")
	}
	return sv, nil
}

// setArg returns one value of SET as text: a string or a name as written
// (the grammar makes both string constants), a number as its digits,
// a boolean keyword as true or false.
func setArg(n *pg.Node) (SetArg, bool) {
	c := n.GetAConst()
	if c == nil {
		return SetArg{}, false
	}
	switch v := c.Val.(type) {
	case *pg.A_Const_Sval:
		return SetArg{Text: v.Sval.Sval}, true
	case *pg.A_Const_Ival:
		return SetArg{Text: itoa(int64(v.Ival.Ival)), Number: true}, true
	case *pg.A_Const_Fval:
		return SetArg{Text: v.Fval.Fval, Number: true}, true
	case *pg.A_Const_Boolval:
		if v.Boolval.Boolval {
			return SetArg{Text: "true"}, true
		}
		return SetArg{Text: "false"}, true
	}
	return SetArg{}, false
}

// convertSetMulti converts SET TRANSACTION and SET SESSION CHARACTERISTICS
// AS TRANSACTION: each option (ISOLATION LEVEL, READ ONLY/WRITE,
// [NOT] DEFERRABLE) sets the parameter PostgreSQL maps it to, for the
// transaction or as the session's default.
func convertSetMulti(v *pg.VariableSetStmt) (Stmt, error) {
	prefix := ""
	switch v.Name {
	case "TRANSACTION":
	case "SESSION CHARACTERISTICS":
		prefix = "default_"
	case "TRANSACTION SNAPSHOT":
		if len(v.Args) == 1 {
			if a, ok := setArg(v.Args[0]); ok && !a.Number {
				return &SetSnapshot{ID: a.Text}, nil
			}
		}
		return nil, pgerror.New(pgerror.SyntaxError, "SET TRANSACTION SNAPSHOT takes one string")
	default:
		return nil, unsupported("SET " + v.Name)
	}
	sv := &SetVar{Name: strings.ToLower(v.Name), Tag: "SET"}
	for _, a := range v.Args {
		d := a.GetDefElem()
		if d == nil || d.Arg == nil {
			return nil, unsupported("this option of SET " + v.Name)
		}
		arg, ok := setArg(d.Arg)
		if !ok {
			return nil, unsupported("this option of SET " + v.Name)
		}
		if arg.Number { // READ ONLY / DEFERRABLE are 1 or 0
			arg = SetArg{Text: map[bool]string{true: "on", false: "off"}[arg.Text != "0"]}
		}
		sv.Multi = append(sv.Multi, &SetVar{Name: prefix + d.Defname, Args: []SetArg{arg}, Tag: "SET"})
	}
	return sv, nil
}

// convertDiscard converts DISCARD ALL | PLANS | SEQUENCES | TEMP.
func convertDiscard(d *pg.DiscardStmt) (Stmt, error) {
	switch d.Target {
	case pg.DiscardMode_DISCARD_ALL:
		return &Discard{Target: "ALL"}, nil
	case pg.DiscardMode_DISCARD_PLANS:
		return &Discard{Target: "PLANS"}, nil
	case pg.DiscardMode_DISCARD_SEQUENCES:
		return &Discard{Target: "SEQUENCES"}, nil
	case pg.DiscardMode_DISCARD_TEMP:
		return &Discard{Target: "TEMP"}, nil
	}
	return nil, unsupported("this form of DISCARD")
}

package sql

import (
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// bindPgSleep binds pg_sleep(seconds): a number of seconds as double
// precision, returning void.
func bindPgSleep(args []plan.Expr) (plan.Expr, error) {
	if len(args) != 1 || !isUnknown(args[0]) && !args[0].Type().IsNumeric() {
		names := make([]string, len(args))
		for i, a := range args {
			names[i] = a.Type().String()
		}
		return nil, pgerror.Newf(pgerror.UndefinedFunction, "function pg_sleep(%s) does not exist", strings.Join(names, ", "))
	}
	return &plan.Call{Op: plan.OpPgSleep, Args: []plan.Expr{castExpr(args[0], types.TypFloat8)}, Typ: types.TypVoid}, nil
}

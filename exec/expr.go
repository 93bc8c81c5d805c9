package exec

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// evaluator computes one expression over a whole batch. The returned Vec is
// owned by the evaluator (or is an input column) and valid until the next
// call; callers must not modify it.
type evaluator interface {
	eval(b *types.Batch) (*types.Vec, error)
}

// compile turns a plan expression into an evaluator. Constant subtrees are
// folded once here.
func (e *Env) compile(x plan.Expr) (evaluator, error) { return e.compileExpr(x, true) }

func (e *Env) compileExpr(x plan.Expr, fold bool) (evaluator, error) {
	switch x := x.(type) {
	case *plan.ColRef:
		return &colEval{idx: x.Idx}, nil
	case *plan.Const:
		return newConstEval(x), nil
	case *plan.Param:
		return e.compileParam(x)
	case *plan.Subquery:
		return e.compileSubquery(x)
	case *plan.Func:
		return e.compileFunc(x)
	}
	if fold && isConstant(x) {
		// A constant that fails to fold (1/0 in a CASE arm never taken, say)
		// is left to fail at run time, only if it is reached.
		if v, err := e.foldConst(x); err == nil {
			return &constEval{val: v, out: types.NewVec(x.Type(), types.BatchSize)}, nil
		}
	}
	switch x := x.(type) {
	case *plan.Cast:
		in, err := e.compile(x.X)
		if err != nil {
			return nil, err
		}
		return &castEval{in: in, from: x.X.Type(), out: types.NewVec(x.Typ, types.BatchSize)}, nil
	case *plan.Case:
		return e.compileCase(x)
	case *plan.Call:
		return e.compileCall(x)
	}
	return nil, pgerror.AssertionFailedf("cannot compile expression %T", x)
}

// isConstant reports whether x reads no columns and no per-row state.
func isConstant(x plan.Expr) bool {
	switch x := x.(type) {
	case *plan.ColRef:
		return false
	case *plan.Const:
		return true
	case *plan.Cast:
		return isConstant(x.X)
	case *plan.Call:
		if x.Op.Volatile() {
			return false
		}
		for _, a := range x.Args {
			if !isConstant(a) {
				return false
			}
		}
		return true
	case *plan.Case:
		for _, w := range x.Whens {
			if !isConstant(w.Cond) || !isConstant(w.Result) {
				return false
			}
		}
		return x.Else == nil || isConstant(x.Else)
	}
	return false
}

var oneRow = func() *types.Batch { b := &types.Batch{}; b.SetLen(1); return b }()

// foldConst evaluates a constant expression to a one-row Vec.
func (e *Env) foldConst(x plan.Expr) (*types.Vec, error) {
	ev, err := e.compileNoFold(x)
	if err != nil {
		return nil, err
	}
	v, err := ev.eval(oneRow)
	if err != nil {
		return nil, err
	}
	out := types.NewVec(x.Type(), 1)
	out.AppendFrom(v, 0)
	return out, nil
}

func (e *Env) compileNoFold(x plan.Expr) (evaluator, error) { return e.compileExpr(x, false) }

type colEval struct{ idx int }

func (c *colEval) eval(b *types.Batch) (*types.Vec, error) { return b.Cols[c.idx], nil }

// constEval repeats one value for every row of the batch.
type constEval struct {
	val *types.Vec // one row; nil for NULL
	out *types.Vec
}

func newConstEval(c *plan.Const) *constEval {
	t := c.Typ
	if t.Kind == types.Unknown {
		t = types.TypText
	}
	ce := &constEval{out: types.NewVec(t, types.BatchSize)}
	if !c.Null {
		ce.val = types.NewVec(t, 1)
		ce.val.AppendFrom(c.Val, 0)
	}
	return ce
}

func (c *constEval) eval(b *types.Batch) (*types.Vec, error) {
	n := b.Len()
	if c.out.Len() == n {
		return c.out, nil
	}
	c.out.Reset()
	for i := 0; i < n; i++ {
		if c.val == nil || c.val.Nulls[0] {
			c.out.AppendNull()
		} else {
			c.out.AppendFrom(c.val, 0)
		}
	}
	return c.out, nil
}

// callEval evaluates a built-in operator or function.
type callEval struct {
	env *Env
	// valAcc holds a large result's bytes (Env.checkValue).
	valAcc *MemAccount
	call   *plan.Call
	args   []evaluator
	vals   []*types.Vec
	out    *types.Vec
	subs   []int64
	like   *likeMatcher
	buf    []byte
}

func (e *Env) compileCall(x *plan.Call) (evaluator, error) {
	if x.Op == plan.OpAnd || x.Op == plan.OpOr {
		return e.compileLogic(x)
	}
	if x.Op == plan.OpPgSleep {
		return e.compileSleep(x)
	}
	switch x.Op {
	case plan.OpL2Distance, plan.OpNegInnerProduct, plan.OpCosineDistance, plan.OpL1Distance,
		plan.OpInnerProduct, plan.OpVectorNorm, plan.OpL2Normalize:
		return e.compileVector(x)
	case plan.OpVectorAdd, plan.OpVectorSub, plan.OpVectorMul, plan.OpVectorConcat, plan.OpSubvector:
		return e.compileVectorArith(x)
	}
	if x.Op == plan.OpIn {
		if in, ok, err := e.compileIntIn(x); ok || err != nil {
			return in, err
		}
	}
	if x.Op == plan.OpCoalesce {
		x = e.pruneCoalesce(x)
	}
	c := &callEval{env: e, call: x, out: types.NewVec(x.Typ, types.BatchSize), vals: make([]*types.Vec, len(x.Args))}
	for _, a := range x.Args {
		ae, err := e.compile(a)
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, ae)
	}
	if x.Op == plan.OpLike || x.Op == plan.OpILike {
		c.like = &likeMatcher{fold: x.Op == plan.OpILike}
	}
	return c, nil
}

// pruneCoalesce drops the arguments of coalesce after the first that is
// a constant other than NULL, as PostgreSQL's planner does: they are never
// its value, and evaluating them could fail (coalesce(1, 1/0) is 1).
func (e *Env) pruneCoalesce(x *plan.Call) *plan.Call {
	for k, a := range x.Args[:len(x.Args)-1] {
		if !isConstant(a) {
			continue
		}
		v, err := e.foldConst(a)
		if err != nil || v.Nulls[0] {
			continue
		}
		c := *x
		c.Args = x.Args[:k+1]
		return &c
	}
	return x
}

// intInEval is `x IN (k1, k2, ...)` for an integer x and integer
// constants, none NULL: a set lookup per row instead of a comparison with
// each constant.
type intInEval struct {
	x   evaluator
	set map[int64]struct{}
	out *types.Vec
}

// compileIntIn compiles x as an intInEval when it is one; ok is false
// otherwise.
func (e *Env) compileIntIn(x *plan.Call) (ev evaluator, ok bool, err error) {
	if len(x.Args) < 2 || x.Args[0].Type().Phys() != types.PhysInt {
		return nil, false, nil
	}
	set := make(map[int64]struct{}, len(x.Args)-1)
	for _, a := range x.Args[1:] {
		k, isConst := a.(*plan.Const)
		if !isConst || k.Null || k.Val == nil || k.Val.Type.Phys() != types.PhysInt || k.Val.Nulls[0] {
			return nil, false, nil
		}
		set[k.Val.Ints[0]] = struct{}{}
	}
	xe, err := e.compile(x.Args[0])
	if err != nil {
		return nil, false, err
	}
	return &intInEval{x: xe, set: set, out: types.NewVec(x.Typ, types.BatchSize)}, true, nil
}

func (c *intInEval) eval(b *types.Batch) (*types.Vec, error) {
	x, err := c.x.eval(b)
	if err != nil {
		return nil, err
	}
	out := c.out
	out.Reset()
	for i, n := 0, b.Len(); i < n; i++ {
		if x.Nulls[i] {
			out.AppendNull()
			continue
		}
		_, found := c.set[x.Ints[i]]
		out.AppendBool(found)
	}
	return out, nil
}

func (c *callEval) eval(b *types.Batch) (*types.Vec, error) {
	for i, a := range c.args {
		v, err := a.eval(b)
		if err != nil {
			return nil, err
		}
		c.vals[i] = v
	}
	n := b.Len()
	out := c.out
	out.Reset()
	switch op := c.call.Op; op {
	case plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod:
		return out, arith(op, c.vals[0], c.vals[1], out, n)
	case plan.OpNeg, plan.OpAbs:
		return out, negate(c.vals[0], out, n, op == plan.OpAbs)
	case plan.OpEq, plan.OpNe, plan.OpLt, plan.OpLe, plan.OpGt, plan.OpGe:
		compareVecs(op, c.vals[0], c.vals[1], out, n)
	case plan.OpNot:
		x := c.vals[0]
		for i := 0; i < n; i++ {
			if x.Nulls[i] {
				out.AppendNull()
			} else {
				out.AppendBool(!x.Bools[i])
			}
		}
	case plan.OpIsNull, plan.OpIsNotNull:
		x := c.vals[0]
		for i := 0; i < n; i++ {
			out.AppendBool(x.Nulls[i] == (op == plan.OpIsNull))
		}
	case plan.OpIn:
		x := c.vals[0]
		for i := 0; i < n; i++ {
			if x.Nulls[i] {
				out.AppendNull()
				continue
			}
			found, sawNull := false, false
			for _, l := range c.vals[1:] {
				if l.Nulls[i] {
					sawNull = true
					continue
				}
				if compareAt(x, i, l, i) == 0 {
					found = true
					break
				}
			}
			switch {
			case found:
				out.AppendBool(true)
			case sawNull:
				out.AppendNull()
			default:
				out.AppendBool(false)
			}
		}
	case plan.OpLike, plan.OpILike:
		x, p := c.vals[0], c.vals[1]
		for i := 0; i < n; i++ {
			if x.Nulls[i] || p.Nulls[i] {
				out.AppendNull()
				continue
			}
			ok, err := c.like.match(x.GetBytes(i), p.GetBytes(i))
			if err != nil {
				return nil, err
			}
			out.AppendBool(ok)
		}
	case plan.OpConcat:
		x, y := c.vals[0], c.vals[1]
		for i := 0; i < n; i++ {
			if x.Nulls[i] || y.Nulls[i] {
				out.AppendNull()
				continue
			}
			if err := c.env.checkValue(&c.valAcc, int64(len(out.Bytes.Data)), int64(len(x.GetBytes(i))+len(y.GetBytes(i)))); err != nil {
				return nil, err
			}
			c.buf = append(append(c.buf[:0], x.GetBytes(i)...), y.GetBytes(i)...)
			out.AppendBytes(c.buf)
		}
	case plan.OpJSONGet, plan.OpJSONGetText:
		return out, c.jsonGet(n)
	case plan.OpJSONContains:
		x, y := c.vals[0], c.vals[1]
		for i := 0; i < n; i++ {
			if x.Nulls[i] || y.Nulls[i] {
				out.AppendNull()
				continue
			}
			ok, err := types.JSONContains(x.GetBytes(i), y.GetBytes(i))
			if err != nil {
				return nil, err
			}
			out.AppendBool(ok)
		}
	case plan.OpSubscript:
		x := c.vals[0]
		t := c.call.Args[0].Type()
	rows:
		for i := 0; i < n; i++ {
			if x.Nulls[i] {
				out.AppendNull()
				continue
			}
			c.subs = c.subs[:0]
			for _, s := range c.vals[1:] {
				if s.Nulls[i] {
					out.AppendNull()
					continue rows
				}
				c.subs = append(c.subs, s.Ints[i])
			}
			types.AppendSubscript(out, t, x.GetBytes(i), c.subs)
		}
	case plan.OpCardinality, plan.OpArrayLength, plan.OpVectorDims:
		x := c.vals[0]
		t := c.call.Args[0].Type()
		for i := 0; i < n; i++ {
			if x.Nulls[i] {
				out.AppendNull()
				continue
			}
			switch {
			case op == plan.OpVectorDims || t.IsVector() && op == plan.OpCardinality:
				out.AppendInt(int64(len(x.GetBytes(i)) / t.VectorElemSize()))
			case op == plan.OpCardinality:
				out.AppendInt(int64(types.Cardinality(t, x.GetBytes(i))))
			default:
				d := c.vals[1]
				if d.Nulls[i] {
					out.AppendNull()
					continue
				}
				tt := t
				if t.IsVector() {
					tt = types.TensorOf(types.DTFloat32, len(x.GetBytes(i))/t.VectorElemSize())
				}
				if l, ok := types.ArrayLength(tt, x.GetBytes(i), int(d.Ints[i])); ok {
					out.AppendInt(int64(l))
				} else {
					out.AppendNull()
				}
			}
		}
	case plan.OpArray:
		return out, c.buildArrays(n)
	case plan.OpRandom:
		for i := 0; i < n; i++ {
			out.AppendFloat(c.env.rng().Float64())
		}
	case plan.OpLower, plan.OpUpper:
		x := c.vals[0]
		for i := 0; i < n; i++ {
			if x.Nulls[i] {
				out.AppendNull()
			} else if op == plan.OpLower {
				out.AppendBytes(bytes.ToLower(x.GetBytes(i)))
			} else {
				out.AppendBytes(bytes.ToUpper(x.GetBytes(i)))
			}
		}
	case plan.OpLength:
		x := c.vals[0]
		octets := x.Type.Kind == types.Bytea
		for i := 0; i < n; i++ {
			switch {
			case x.Nulls[i]:
				out.AppendNull()
			case octets:
				out.AppendInt(int64(len(x.GetBytes(i))))
			default:
				out.AppendInt(int64(utf8.RuneCount(x.GetBytes(i))))
			}
		}
	case plan.OpCoalesce:
		for i := 0; i < n; i++ {
			done := false
			for _, v := range c.vals {
				if !v.Nulls[i] {
					out.AppendFrom(v, i)
					done = true
					break
				}
			}
			if !done {
				out.AppendNull()
			}
		}
	case plan.OpNullIf:
		x, y := c.vals[0], c.vals[1]
		for i := 0; i < n; i++ {
			if !x.Nulls[i] && !y.Nulls[i] && compareAt(x, i, y, i) == 0 {
				out.AppendNull()
			} else {
				out.AppendFrom(x, i)
			}
		}
	case plan.OpNextVal:
		for i := 0; i < n; i++ {
			v, err := c.env.DB.NextVal(c.call.Seq.TableID, c.call.Seq.Col)
			if err != nil {
				return nil, err
			}
			if err := appendIntChecked(out, v, false); err != nil {
				return nil, err
			}
		}
	default:
		return nil, pgerror.AssertionFailedf("operator %s has no evaluator", op)
	}
	return out, nil
}

func (c *callEval) jsonGet(n int) error {
	x, k := c.vals[0], c.vals[1]
	out := c.out
	for i := 0; i < n; i++ {
		if x.Nulls[i] || k.Nulls[i] {
			out.AppendNull()
			continue
		}
		doc := x.GetBytes(i)
		var val []byte
		var ok bool
		if k.Type.Phys() == types.PhysInt {
			val, ok = types.JSONIndex(doc, int(k.Ints[i]))
		} else {
			val, ok = types.JSONField(doc, string(k.GetBytes(i)))
		}
		if !ok {
			out.AppendNull()
			continue
		}
		if c.call.Op == plan.OpJSONGet {
			out.AppendBytes(val)
			continue
		}
		s, isNull := types.JSONText(val)
		if isNull {
			out.AppendNull()
		} else {
			out.AppendBytes(s)
		}
	}
	return nil
}

// appendIntChecked appends v to an integer Vec after checking the range of
// its type; overflow forces the out-of-range error.
func appendIntChecked(out *types.Vec, v int64, overflow bool) error {
	lo, hi, err := intRange(out.Type.Kind)
	if overflow || v < lo || v > hi {
		return err
	}
	out.AppendInt(v)
	return nil
}

// compareAt compares non-NULL row i of x with row j of y (same physical
// layout). Floats order NaN above everything, as PostgreSQL does.
func compareAt(x *types.Vec, i int, y *types.Vec, j int) int {
	switch x.Type.Phys() {
	case types.PhysInt:
		a, b := x.Ints[i], y.Ints[j]
		if a < b {
			return -1
		} else if a > b {
			return 1
		}
		return 0
	case types.PhysFloat:
		return types.CompareFloat(x.Floats[i], y.Floats[j])
	case types.PhysBool:
		a, b := x.Bools[i], y.Bools[j]
		if a == b {
			return 0
		} else if !a {
			return -1
		}
		return 1
	}
	switch k := x.Type.Kind; k {
	case types.Vector, types.HalfVec:
		return compareVectors(x.GetBytes(i), y.GetBytes(j), k == types.HalfVec)
	case types.Numeric:
		return compareNumerics(x.GetBytes(i), y.GetBytes(j))
	}
	return bytes.Compare(x.GetBytes(i), y.GetBytes(j))
}

// compareVectors orders two vectors (or halfvecs) as pgvector's btree
// operators do: element by element as numbers, then the shorter first.
func compareVectors(a, b []byte, half bool) int {
	size := 4
	if half {
		size = 2
	}
	n := min(len(a), len(b)) / size
	for k := range n {
		var x, y float32
		if half {
			x = types.Float16ToFloat32(binary.LittleEndian.Uint16(a[2*k:]))
			y = types.Float16ToFloat32(binary.LittleEndian.Uint16(b[2*k:]))
		} else {
			x = math.Float32frombits(binary.LittleEndian.Uint32(a[4*k:]))
			y = math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
		}
		if x < y {
			return -1
		}
		if x > y {
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// compareVecs appends to out (empty, boolean) the comparison op of the
// first n rows of x and y, NULL where either is NULL.
func compareVecs(op plan.Op, x, y, out *types.Vec, n int) {
	out.Nulls = slices.Grow(out.Nulls[:0], n)[:n]
	out.Bools = slices.Grow(out.Bools[:0], n)[:n]
	r := out.Bools
	if x.Type.Phys() == types.PhysInt && y.Type.Phys() == types.PhysInt {
		// One tight loop per operator: a filter such as category = $1
		// runs over every row of a scan.
		compareInts(op, x.Ints[:n], y.Ints[:n], r)
		xn, yn, nulls := x.Nulls[:n], y.Nulls[:n], out.Nulls[:n]
		if !anyTrue(xn) && !anyTrue(yn) {
			clear(nulls)
			return
		}
		for i := range nulls {
			nl := xn[i] || yn[i]
			nulls[i] = nl
			r[i] = r[i] && !nl
		}
		return
	}
	for i := range r {
		if x.Nulls[i] || y.Nulls[i] {
			continue
		}
		c := compareAt(x, i, y, i)
		switch op {
		case plan.OpEq:
			r[i] = c == 0
		case plan.OpNe:
			r[i] = c != 0
		case plan.OpLt:
			r[i] = c < 0
		case plan.OpLe:
			r[i] = c <= 0
		case plan.OpGt:
			r[i] = c > 0
		default:
			r[i] = c >= 0
		}
	}
	nulls := out.Nulls
	for i := range nulls {
		nulls[i] = x.Nulls[i] || y.Nulls[i]
		if nulls[i] {
			r[i] = false
		}
	}
}

// compareInts stores a[i] op b[i] in r[i].
func compareInts(op plan.Op, a, b []int64, r []bool) {
	switch op {
	case plan.OpEq:
		for i := range r {
			r[i] = a[i] == b[i]
		}
	case plan.OpNe:
		for i := range r {
			r[i] = a[i] != b[i]
		}
	case plan.OpLt:
		for i := range r {
			r[i] = a[i] < b[i]
		}
	case plan.OpLe:
		for i := range r {
			r[i] = a[i] <= b[i]
		}
	case plan.OpGt:
		for i := range r {
			r[i] = a[i] > b[i]
		}
	default:
		for i := range r {
			r[i] = a[i] >= b[i]
		}
	}
}

// castEval converts a Vec to another type.
type castEval struct {
	in   evaluator
	from types.Type
	out  *types.Vec
	buf  []byte
}

func (c *castEval) eval(b *types.Batch) (*types.Vec, error) {
	x, err := c.in.eval(b)
	if err != nil {
		return nil, err
	}
	out := c.out
	out.Reset()
	n := b.Len()
	to := out.Type
	from := c.from
	for i := 0; i < n; i++ {
		if x.Nulls[i] {
			out.AppendNull()
			continue
		}
		if err := c.castOne(x, i, from, to); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *castEval) castOne(x *types.Vec, i int, from, to types.Type) error {
	out := c.out
	switch {
	case from.Kind == types.Unknown || (from.IsTextual() && !to.IsTextual()):
		return types.AppendParsed(out, string(x.GetBytes(i)))
	case to.IsTextual():
		var s []byte
		switch {
		case from.Phys() == types.PhysBytes && (from.IsTextual() || from.Kind == types.Unknown):
			s = x.GetBytes(i)
		case from.Kind == types.Bool:
			// bool's output form is t/f, but its cast to text spells the word.
			s = boolWords[btoi(x.Bools[i])]
		default:
			c.buf = types.AppendText(c.buf[:0], x, i)
			s = c.buf
		}
		if to.Kind == types.Varchar && to.Width > 0 && utf8.RuneCount(s) > to.Width {
			return pgerror.Newf(pgerror.StringDataRightTrunc, "value too long for type character varying(%d)", to.Width)
		}
		switch {
		case to.Kind == types.Bpchar:
			if from.Kind == types.Bpchar && from.Width == to.Width {
				break
			}
			p, err := types.PadBpchar(string(bytes.TrimRight(s, " ")), to.Width)
			if err != nil {
				return err
			}
			out.AppendString(p)
			return nil
		case from.Kind == types.Bpchar:
			// character(n)'s trailing spaces mean nothing to other types.
			s = bytes.TrimRight(s, " ")
		}
		out.AppendBytes(s)
		return nil
	case to.Kind == types.Numeric || from.Kind == types.Numeric:
		return c.castNumeric(x, i, from, to)
	case from.IsDateTime() && to.IsDateTime():
		out.AppendInt(types.ConvertDateTime(x.Ints[i], from.Kind, to.Kind))
		return nil
	case from.IsInteger() && to.IsInteger():
		return appendIntChecked(out, x.Ints[i], false)
	case from.IsInteger() && (to.Kind == types.Float4 || to.Kind == types.Float8):
		f := float64(x.Ints[i])
		if to.Kind == types.Float4 {
			f = float64(float32(f))
		}
		out.AppendFloat(f)
		return nil
	case from.Phys() == types.PhysFloat && to.IsInteger():
		f := x.Floats[i]
		if math.IsNaN(f) || math.IsInf(f, 0) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
			return appendIntChecked(out, 0, true)
		}
		return appendIntChecked(out, int64(math.RoundToEven(f)), false)
	case from.Phys() == types.PhysFloat && to.Phys() == types.PhysFloat:
		f := x.Floats[i]
		if to.Kind == types.Float4 {
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
				return errFloatOverflow
			}
			if f32 == 0 && f != 0 {
				return errFloatUnder
			}
			f = float64(f32)
		}
		out.AppendFloat(f)
		return nil
	case from.Kind == types.Bool && to.IsInteger():
		v := int64(0)
		if x.Bools[i] {
			v = 1
		}
		out.AppendInt(v)
		return nil
	case from.IsInteger() && to.Kind == types.Bool:
		out.AppendBool(x.Ints[i] != 0)
		return nil
	case from.Kind == types.JSON && to.Kind == types.JSONB:
		var err error
		c.buf, err = types.NormalizeJSONB(x.GetBytes(i), c.buf[:0])
		if err != nil {
			return err
		}
		out.AppendBytes(c.buf)
		return nil
	case from.Phys() == types.PhysBytes && to.Phys() == types.PhysBytes && sameLayout(from, to):
		v := x.GetBytes(i)
		if want := fixedBytes(to); want >= 0 && len(v) != want {
			esize := 4
			if to.Kind == types.HalfVec {
				esize = 2
			}
			return pgerror.Newf(pgerror.DataException, "expected %d dimensions, not %d", fixedDims(to), len(v)/esize)
		}
		out.AppendBytes(v)
		return nil
	}
	// Remaining conversions (tensor dtype changes, halfvec from and to
	// vector and tensors, arrays to vectors) go through the text form; a
	// one-dimensional tensor's or array's {...} reads as a vector's [...],
	// as pgvector casts integer[], real[], double precision[] and
	// numeric[].
	c.buf = types.AppendText(c.buf[:0], x, i)
	if to.IsVector() && len(c.buf) >= 2 && c.buf[0] == '{' {
		c.buf[0], c.buf[len(c.buf)-1] = '[', ']'
	}
	return types.AppendParsed(out, string(c.buf))
}

// castNumeric converts row i of x to or from numeric: integers exactly,
// floats by their shortest decimal of 15 (6 for real) significant digits
// as float8_numeric, numerics to integers rounded half away from zero,
// and any numeric into numeric(p, s) rounded to its scale.
func (c *castEval) castNumeric(x *types.Vec, i int, from, to types.Type) error {
	out := c.out
	if to.Kind != types.Numeric {
		v := x.Bytes.Get(i)
		switch {
		case to.IsInteger():
			n, err := types.NumericToInt(v, to.Kind)
			if err != nil {
				return err
			}
			out.AppendInt(n)
			return nil
		case to.Kind == types.Float8:
			out.AppendFloat(types.NumericToFloat(v))
			return nil
		case to.Kind == types.Float4:
			f := types.NumericToFloat(v)
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
				return errFloatOverflow
			}
			if f32 == 0 && f != 0 {
				return errFloatUnder
			}
			out.AppendFloat(float64(f32))
			return nil
		}
		return pgerror.Newf(pgerror.CannotCoerce, "cannot cast type %s to %s", from, to)
	}
	b := c.buf[:0]
	switch {
	case from.Kind == types.Numeric:
		b = append(b, x.Bytes.Get(i)...)
	case from.IsInteger():
		b = types.AppendNumericInt(b, x.Ints[i])
	case from.Kind == types.Float8:
		b = types.AppendNumericFloat(b, x.Floats[i], 15)
	case from.Kind == types.Float4:
		b = types.AppendNumericFloat(b, x.Floats[i], 6)
	case from.Kind == types.Bool:
		return pgerror.Newf(pgerror.CannotCoerce, "cannot cast type %s to %s", from, to)
	default:
		c.buf = types.AppendText(b, x, i)
		return types.AppendParsed(out, string(c.buf))
	}
	c.buf = b
	if to.Width == 0 {
		out.AppendBytes(b)
		return nil
	}
	return out.AppendEncoded(func(dst []byte) ([]byte, error) {
		return types.NumericApplyTypmod(dst, b, to.Width, to.Scale)
	})
}

// sameLayout reports whether values of from are valid bytes for to up to a
// length check: json↔jsonb text, vector↔float32 tensors, equal kinds.
func sameLayout(from, to types.Type) bool {
	f32 := func(t types.Type) bool {
		return t.Kind == types.Vector || (t.Kind == types.Tensor && t.DType == types.DTFloat32 && len(t.Shape) == 1 && !t.Ragged())
	}
	if from.Kind == types.JSONB && to.Kind == types.JSON {
		return true
	}
	if f32(from) && f32(to) {
		return true
	}
	return from.Kind == to.Kind && from.Kind != types.Tensor
}

func fixedDims(t types.Type) int {
	if t.IsVector() {
		return t.Width
	}
	if t.Kind == types.Tensor {
		return t.FixedElems()
	}
	return -1
}

func fixedBytes(t types.Type) int {
	switch t.Kind {
	case types.Vector, types.HalfVec:
		if t.Width == 0 {
			return -1
		}
		return t.Width * t.VectorElemSize()
	case types.Tensor:
		if n := t.FixedElems(); n >= 0 {
			return n * t.DType.Size()
		}
	}
	return -1
}

var boolWords = [2][]byte{[]byte("false"), []byte("true")}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

var _ = strconv.Itoa

// buildArrays appends to c.out, for each of n rows, the tensor of the
// row's argument values (OpArray). A NULL element fails: a tensor holds
// no NULLs.
func (c *callEval) buildArrays(n int) error {
	out := c.out
	dt := c.call.Typ.DType
	for i := 0; i < n; i++ {
		c.buf = c.buf[:0]
		for k, v := range c.vals {
			switch {
			case v.Nulls[i]:
				return pgerror.Newf(pgerror.NullValueNotAllowed, "element %d of ARRAY[...] is NULL: a tensor of %s holds no NULLs", k+1, dt).
					WithHint("Replace NULLs with a value, as in coalesce(x, 0).")
			case v.Type.Phys() == types.PhysBool:
				c.buf = append(c.buf, byte(btoi(v.Bools[i])))
			case v.Type.Phys() == types.PhysInt:
				c.buf = types.AppendElemInt(c.buf, dt, v.Ints[i])
			default:
				c.buf = types.AppendElemFloat(c.buf, dt, v.Floats[i])
			}
		}
		out.AppendBytes(c.buf)
	}
	return nil
}

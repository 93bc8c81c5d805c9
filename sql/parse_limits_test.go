package sql

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// nestGen builds a statement with n levels or terms of one construct of the
// grammar.
type nestGen struct {
	name string
	// flat marks constructs that stay one level deep however long
	// (lists, AND/OR chains): they parse at every size the token limit
	// allows, so they are tried up to 10^5 only, as parsing is slow.
	flat bool
	gen  func(n int) string
}

func chain(op, operand string) func(n int) string {
	return func(n int) string {
		return "SELECT " + strings.Repeat(operand+op, n) + operand
	}
}

func nest(open, leaf, close string) func(n int) string {
	return func(n int) string {
		return "SELECT " + strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
	}
}

func list(prefix, item, sep, suffix string) func(n int) string {
	return func(n int) string {
		return "SELECT " + prefix + strings.Repeat(item+sep, n) + item + suffix
	}
}

// nestGens covers every operator class of the grammar.
var nestGens = []nestGen{
	{name: "plus", gen: chain("+", "1")},
	{name: "minus", gen: chain("-", "1")},
	{name: "times", gen: chain("*", "1")},
	{name: "divide", gen: chain("/", "1")},
	{name: "modulo", gen: chain("%", "1")},
	{name: "power", gen: chain("^", "2")},
	{name: "less", gen: nest("(", "1", " < 1)")},
	{name: "equal", gen: nest("(", "1", " = 1)")},
	{name: "not-equal", gen: nest("(", "1", " <> 1)")},
	{name: "greater-equal", gen: nest("(", "1", " >= 1)")},
	{name: "concat", gen: chain("||", "'a'")},
	{name: "concat-tight", gen: chain("||", "a")},
	{name: "and", flat: true, gen: chain(" AND ", "true")},
	{name: "or", flat: true, gen: chain(" OR ", "x = 1")},
	{name: "and-or", flat: true, gen: chain(" AND a OR ", "b")},
	{name: "not", gen: nest("NOT ", "true", "")},
	{name: "unary-minus", gen: nest("- ", "a", "")},
	{name: "unary-minus-tight", gen: nest("-", "a", "")},
	{name: "plus-minus-run", gen: chain("+-", "a")},
	{name: "is-true", gen: nest("(", "true", ") IS TRUE")},
	{name: "is-not-null", gen: nest("(", "a", ") IS NOT NULL")},
	{name: "is-distinct", gen: nest("(", "a", ") IS DISTINCT FROM b")},
	{name: "between", gen: nest("a BETWEEN b AND (", "c", ")")},
	{name: "between-operand", gen: nest("(", "true", " BETWEEN false AND true)")},
	{name: "between-flat", flat: true, gen: chain(" AND ", "a BETWEEN 1 AND 2")},
	{name: "like", gen: nest("(", "a", ") LIKE 'x'")},
	{name: "parentheses", gen: nest("(", "1", ")")},
	{name: "case-then", gen: nest("CASE WHEN true THEN ", "1", " END")},
	{name: "case-when", gen: nest("CASE WHEN ", "true", " THEN true END")},
	{name: "case-flat", flat: true, gen: list("CASE ", "WHEN a THEN 1", " ", " END")},
	{name: "scalar-subquery", gen: nest("(SELECT ", "1", ")")},
	{name: "exists", gen: nest("EXISTS (SELECT ", "1", ")")},
	{name: "in-list", flat: true, gen: list("1 IN (", "1", ",", ")")},
	{name: "in-nested", gen: nest("1 IN (", "1", ")")},
	{name: "in-subquery", gen: nest("1 IN (SELECT ", "1", ")")},
	{name: "array-nested", gen: nest("ARRAY[", "1", "]")},
	{name: "array-flat", flat: true, gen: list("ARRAY[", "1", ",", "]")},
	{name: "array-literal", gen: func(n int) string {
		return "SELECT '" + strings.Repeat("{", n) + "1" + strings.Repeat("}", n) + "'::int[]"
	}},
	{name: "array-literal-flat", flat: true, gen: list("'{", "1", ",", "}'::int[]")},
	{name: "json-literal", gen: func(n int) string {
		return "SELECT '" + strings.Repeat("[", n) + "1" + strings.Repeat("]", n) + "'::jsonb"
	}},
	{name: "json-literal-e", gen: func(n int) string {
		return "SELECT E'" + strings.Repeat("[", n) + "\\'" + strings.Repeat("]", n) + "'::jsonb"
	}},
	{name: "subscript", gen: func(n int) string { return "SELECT a" + strings.Repeat("[1]", n) }},
	{name: "row-nested", gen: nest("ROW(", "1", ")")},
	{name: "row-flat", flat: true, gen: list("ROW(", "1", ",", ")")},
	{name: "function-nested", gen: nest("abs(", "1", ")")},
	{name: "function-args", flat: true, gen: list("coalesce(", "1", ",", ")")},
	{name: "cast-chain", gen: func(n int) string { return "SELECT 1" + strings.Repeat("::int", n) }},
	{name: "cast-nested", gen: nest("CAST(", "1", " AS int)")},
	{name: "json-arrow", gen: chain("->", "j")},
	{name: "json-arrow-text", gen: nest("(", "j", ")->>'a'")},
	{name: "vector-distance", gen: chain("<->", "'[1,2]'")},
	{name: "values-flat", flat: true, gen: func(n int) string {
		return "VALUES " + strings.Repeat("(1),", n) + "(1)"
	}},
	{name: "select-list", flat: true, gen: list("", "1", ",", "")},
	{name: "string-literal", flat: true, gen: func(n int) string {
		return "SELECT '" + strings.Repeat("x", n*100) + "'"
	}},
	{name: "dollar-quoted", gen: func(n int) string {
		return "SELECT $q$" + strings.Repeat("((", n) + "$q$"
	}},
	{name: "comment", gen: func(n int) string {
		return "SELECT 1 /* " + strings.Repeat("((/* ", n) + strings.Repeat("*/", n) + " */ -- " + strings.Repeat("(", n)
	}},
	{name: "default-deparse", gen: func(n int) string {
		return "CREATE TABLE t (a int DEFAULT " + strings.Repeat("1+", n) + "1)"
	}},
}

// parseOK reports whether err is an outcome the parser may give for a
// well-formed statement of any size: none, a limit (54000, 54001), or a
// construct the conversion does not support yet (0A000).
func parseOK(err error) bool {
	if err == nil {
		return true
	}
	var pe *pgerror.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case pgerror.StatementTooComplex, pgerror.ProgramLimitExceeded, pgerror.FeatureNotSupported:
		return true
	}
	return false
}

// TestParseLimitsGenerated parses every construct at growing sizes: each
// either parses or is refused with 54001/54000, and none kills the process
// (a C stack overflow in the parser is a SIGSEGV).
func TestParseLimitsGenerated(t *testing.T) {
	for _, g := range nestGens {
		t.Run(g.name, func(t *testing.T) {
			for _, n := range []int{10, 1000, 10_000, 100_000, 1_000_000} {
				if g.flat && n > 100_000 {
					break
				}
				_, err := Parse(g.gen(n))
				if !parseOK(err) {
					t.Fatalf("n=%d: %v (%#v)", n, err, err)
				}
				if n == 10 {
					if code := pgerror.GetCode(err); code == pgerror.StatementTooComplex || code == pgerror.ProgramLimitExceeded {
						t.Fatalf("n=10 refused: %v", err)
					}
				}
			}
		})
	}
}

// TestParseLimitsDeep checks that what nests is refused with PostgreSQL's
// 54001 and hint well before the C stack could overflow, and that the same
// construct parses when shallow.
func TestParseLimitsDeep(t *testing.T) {
	for _, c := range []struct {
		name string
		q    string
	}{
		{"plus 25000", chain("+", "1")(25_000)},
		{"plus 100000", chain("+", "1")(100_000)},
		{"concat 30000", chain("||", "'a'")(30_000)},
		{"parentheses 100000", nest("(", "1", ")")(100_000)},
		{"case 10000", nest("CASE WHEN true THEN ", "1", " END")(10_000)},
		{"subquery 5000", nest("(SELECT ", "1", ")")(5_000)},
		{"json 100000", "SELECT '" + strings.Repeat("[", 100_000) + "'::jsonb"},
		{"default 5000", "CREATE TABLE t (a int DEFAULT " + strings.Repeat("1+", 5000) + "1)"},
	} {
		_, err := Parse(c.q)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != pgerror.StatementTooComplex || pe.Message != "stack depth limit exceeded" {
			t.Errorf("%s: %v, want 54001", c.name, err)
			continue
		}
		want := fmt.Sprintf(`Increase the configuration parameter "max_stack_depth" (currently %dkB), after ensuring the platform's stack depth limit is adequate.`, DefaultStackDepthKB())
		if pe.Hint != want {
			t.Errorf("%s: hint %q", c.name, pe.Hint)
		}
	}
	// Half as deep as the default allows parses (2,600 operators under
	// 2MB, 1,300 CASE, 870 subqueries, 430 operators in a DEFAULT).
	half := int(DefaultStackDepthKB() * 1024 / 2)
	for _, q := range []string{
		chain("+", "1")(half / costOperator),
		nest("(", "1", ")")(half / costGroup),
		nest("CASE WHEN true THEN ", "1", " END")(half / costCase),
		nest("(SELECT ", "1", ")")(half / (costGroup + costSubquery)),
		"CREATE TABLE t (a int DEFAULT " + strings.Repeat("1+", half/costOperator/deparseFactor) + "1)",
	} {
		if _, err := Parse(q); err != nil {
			t.Errorf("%.40s...: %v", q, err)
		}
	}
}

// TestParseLimitsFollowStackDepth checks that the bound follows
// max_stack_depth.
func TestParseLimitsFollowStackDepth(t *testing.T) {
	q := chain("+", "1")(1000)
	if _, err := ParseLimited(q, Limits{MaxStackDepth: 100 << 10}); pgerror.GetCode(err) != pgerror.StatementTooComplex {
		t.Fatalf("100kB: %v", err)
	}
	if _, err := ParseLimited(q, Limits{MaxStackDepth: 1 << 20}); err != nil {
		t.Fatalf("1MB: %v", err)
	}
	// A deeper tree than the protobuf decoder takes by default (10,000
	// messages, about 5,000 operators) decodes under a larger setting.
	if MaxStackDepthKB() >= 4096 {
		if _, err := ParseLimited(chain("+", "1")(7000), Limits{MaxStackDepth: 4 << 20}); err != nil {
			t.Fatalf("4MB, 7000 terms: %v", err)
		}
	}
}

func TestParseLimitsSize(t *testing.T) {
	_, err := Parse("SELECT '" + strings.Repeat("x", MaxQueryBytes) + "'")
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded {
		t.Fatalf("long literal: %v", err)
	}
	_, err = Parse("SELECT 1 IN (" + strings.Repeat("1,", MaxQueryTokens/2) + "1)")
	if pgerror.GetCode(err) != pgerror.ProgramLimitExceeded {
		t.Fatalf("long IN list: %v", err)
	}
}

// TestParseLimitsBetween checks that BETWEEN, which the binder expands by
// repeating its first operand, cannot nest in that operand so deep that
// the expansion (2^n copies) exhausts the server.
func TestParseLimitsBetween(t *testing.T) {
	q := nest("(", "true", " BETWEEN false AND true)")
	if _, err := Parse(q(12)); err != nil {
		t.Fatalf("12 levels: %v", err)
	}
	_, err := Parse(q(30))
	if pgerror.GetCode(err) != pgerror.StatementTooComplex {
		t.Fatalf("30 levels: %v", err)
	}
	if _, err := Parse("SELECT 1 WHERE " + strings.Repeat("a BETWEEN 1 AND 2 AND ", 50_000) + "true"); err != nil {
		t.Fatalf("50,000 BETWEENs side by side: %v", err)
	}
}

// TestPrescanLinear checks that the prescan stays linear on inputs made to
// defeat it: it runs before any other limit.
func TestPrescanLinear(t *testing.T) {
	for _, q := range []string{
		"SELECT " + strings.Repeat("+", 8<<20),
		"SELECT " + strings.Repeat("(", 5000) + strings.Repeat("]", 8<<20),
		"SELECT " + strings.Repeat("$a", 4<<20),
		"SELECT " + strings.Repeat("/*", 4<<20),
		"SELECT '" + strings.Repeat("[", 8<<20),
	} {
		// A quadratic scan of these would take hours.
		prescan(q, 1<<62)
	}
}

// TestPrescanLexing checks that what is not SQL nesting (strings, quoted
// identifiers, dollar quotes, comments) costs nothing, and what is does.
func TestPrescanLexing(t *testing.T) {
	deep := strings.Repeat("(", 20_000)
	for _, q := range []string{
		"SELECT '" + deep + "'",
		"SELECT E'\\'" + deep + "'",
		"SELECT 'it''s " + deep + "'",
		`SELECT "` + deep + `"`,
		`SELECT "a""` + deep + `"`,
		"SELECT $$" + deep + "$$",
		"SELECT $tag$ $$ " + deep + "$tag$",
		"SELECT 1 -- " + deep,
		"SELECT 1 /* /* */ " + deep + " */",
		"SELECT '" + strings.Repeat("x", 1000) + "'",
		"SELECT '" + strings.Repeat("}", 100_000) + "'",
		"SELECT a FROM t WHERE " + strings.Repeat("a = 1 AND ", 20_000) + "true",
		"SELECT a FROM t WHERE " + strings.Repeat("a = 1 OR ", 20_000) + "true",
		"SELECT 1 IN (" + strings.Repeat("1+1,", 20_000) + "1)",
	} {
		if cost, _, _ := prescan(q, 1<<20); cost > 1<<20 {
			t.Errorf("%.30q...: cost %d", q, cost)
		}
	}
	for _, q := range []string{
		"SELECT " + deep,
		"SELECT $1" + strings.Repeat("+$1", 20_000),
		"SELECT a$" + strings.Repeat("+a$", 20_000),
		"SELECT 1 /* */ " + deep,
		"SELECT '{" + strings.Repeat("{", 20_000) + "'",
		"SELECT ' [" + strings.Repeat("[", 20_000) + "'",
		"SELECT " + strings.Repeat("+-", 10_000) + "1",
		"SELECT 1 BETWEEN " + strings.Repeat("a AND b BETWEEN ", 10_000) + "1 AND 2",
		"SELECT " + strings.Repeat("CASE WHEN ", 10_000),
		"SELECT 1 " + strings.Repeat("+", 10_000) + " 1",
	} {
		if cost, _, _ := prescan(q, 1<<20); cost <= 1<<20 {
			t.Errorf("%.30q...: cost %d", q, cost)
		}
	}
	for run, want := range map[string]int64{"+": 1, "->>": 1, "<->": 1, "+-+-": 4, "*-": 2, "<=": 1, "@-": 1, "||": 1, "<<+-": 3, "=-": 2} {
		if got := operatorCount(run); got != want {
			t.Errorf("operatorCount(%q) = %d, want %d", run, got, want)
		}
	}
}

package robust

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/proctest"
)

func connectPg(t *testing.T, s *proctest.Server) *pgconn.PgConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, s.DSN("postgres", "", "postgres"))
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// simple runs q with the simple protocol and returns the first value of its
// last result.
func simple(c *pgconn.PgConn, q string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, err := c.Exec(ctx, q).ReadAll()
	if err != nil {
		return "", err
	}
	if len(rs) == 0 || len(rs[len(rs)-1].Rows) == 0 {
		return "", nil
	}
	return string(rs[len(rs)-1].Rows[0][0]), nil
}

func wantCode(t *testing.T, what string, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("%s: %v, want SQLSTATE %s", what, err, code)
	}
	return pe
}

// stillServing checks that the server survived and that a new connection
// runs a query.
func stillServing(t *testing.T, s *proctest.Server) {
	t.Helper()
	if !s.Alive() {
		t.Fatalf("server died:\n%s", s.Log())
	}
	if v, err := simple(connectPg(t, s), "SELECT 41 + 1"); err != nil || v != "42" {
		t.Fatalf("new connection: %q, %v", v, err)
	}
}

func repeatChain(op, operand string, n int) string {
	return "SELECT " + strings.Repeat(operand+op, n) + operand
}

// TestParserDeepStatementsRefused sends the statements that overflowed the
// parser's C stack and killed the process: each gets PostgreSQL's 54001,
// and the server goes on.
func TestParserDeepStatementsRefused(t *testing.T) {
	s := proctest.Start(t, nil)
	c := connectPg(t, s)
	hint := regexp.MustCompile(`^Increase the configuration parameter "max_stack_depth" \(currently 2048kB\), after ensuring the platform's stack depth limit is adequate\.$`)
	for _, q := range []struct{ name, sql string }{
		{"25,000 terms of 1+", repeatChain("+", "1", 25_000)},
		{"100,000 terms of 1+", repeatChain("+", "1", 100_000)},
		{"30,000 terms of 'a'||", repeatChain("||", "'a'", 30_000)},
		{"100,000 parentheses", "SELECT " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000)},
		{"10,000 nested CASE", "SELECT " + strings.Repeat("CASE WHEN true THEN ", 10_000) + "1" + strings.Repeat(" END", 10_000)},
		{"5,000 nested subqueries", "SELECT " + strings.Repeat("(SELECT ", 5_000) + "1" + strings.Repeat(")", 5_000)},
		{"a DEFAULT of 5,000 terms (deparsed)", "CREATE TABLE deep (a int DEFAULT " + strings.Repeat("1+", 5_000) + "1)"},
		{"100,000 nested JSON arrays", "SELECT '" + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "'::jsonb"},
	} {
		_, err := simple(c, q.sql)
		pe := wantCode(t, q.name, err, "54001")
		if pe.Message != "stack depth limit exceeded" || !hint.MatchString(pe.Hint) {
			t.Errorf("%s: %q, hint %q", q.name, pe.Message, pe.Hint)
		}
		stillServing(t, s)
	}
	// BETWEEN binds its first operand twice: nested in it 30 deep, it
	// would bind 2^30 copies.
	_, err := simple(c, "SELECT "+strings.Repeat("(", 30)+"true"+strings.Repeat(" BETWEEN false AND true)", 30))
	wantCode(t, "30 BETWEEN nested in their first operand", err, "54001")
	stillServing(t, s)
	// The extended protocol parses at Parse.
	_, err = c.Prepare(context.Background(), "", repeatChain("+", "1", 25_000), nil)
	wantCode(t, "Parse of 25,000 terms", err, "54001")
	// The session goes on after the errors.
	if v, err := simple(c, "SELECT 1"); err != nil || v != "1" {
		t.Fatalf("same connection: %q, %v", v, err)
	}
	stillServing(t, s)
}

// TestParserDeepStatementsRun runs statements just inside the limit through
// binding, planning and execution, whose recursion the limit bounds too, and
// deeper ones under the largest max_stack_depth.
func TestParserDeepStatementsRun(t *testing.T) {
	s := proctest.Start(t, nil)
	c := connectPg(t, s)
	for _, q := range []struct{ name, sql, want string }{
		{"4,000 terms of 1+", repeatChain("+", "1", 3_999), "4000"},
		{"3,000 terms of 'a'||", "SELECT length(" + repeatChain("||", "'a'", 2_999)[len("SELECT "):] + ")", "3000"},
		{"4,000 parentheses", "SELECT " + strings.Repeat("(", 4_000) + "7" + strings.Repeat(")", 4_000), "7"},
		{"1,500 nested CASE", "SELECT " + strings.Repeat("CASE WHEN true THEN ", 1_500) + "7" + strings.Repeat(" END", 1_500), "7"},
		{"800 nested subqueries", "SELECT " + strings.Repeat("(SELECT ", 800) + "7" + strings.Repeat(")", 800), "7"},
		{"2,000 nested abs()", "SELECT " + strings.Repeat("abs(", 2_000) + "-7" + strings.Repeat(")", 2_000), "7"},
		{"2,000 NOT", "SELECT " + strings.Repeat("NOT ", 2_000) + "true", "t"},
	} {
		v, err := simple(c, q.sql)
		if err != nil || v != q.want {
			t.Errorf("%s: %q, %v", q.name, v, err)
		}
	}
	// Under the largest max_stack_depth the stack allows, a chain about
	// four times as deep as the default allows (past the protobuf
	// decoder's default nesting limit) runs, or is refused cleanly.
	_, err := simple(c, "SET max_stack_depth = '100GB'")
	pe := wantCode(t, "SET max_stack_depth = '100GB'", err, "22023")
	m := regexp.MustCompile(`^"max_stack_depth" must not exceed (\d+)kB\.$`).FindStringSubmatch(pe.Message)
	if m == nil {
		t.Fatalf("SET max_stack_depth = '100GB': %q", pe.Message)
	}
	maxKB, _ := strconv.Atoi(m[1])
	if _, err := simple(c, fmt.Sprintf("SET max_stack_depth = '%dkB'", maxKB)); err != nil {
		t.Fatal(err)
	}
	n := maxKB * 1024 / 400 * 9 / 10
	if v, err := simple(c, repeatChain("+", "1", n-1)); err != nil || v != strconv.Itoa(n) {
		t.Errorf("%d terms under max_stack_depth = %dkB: %q, %v", n, maxKB, v, err)
	}
	stillServing(t, s)
}

// TestParserMaxStackDepthSetting checks max_stack_depth: PostgreSQL's
// default, its range, and that the parser's limit follows it.
func TestParserMaxStackDepthSetting(t *testing.T) {
	s := proctest.Start(t, nil)
	c := connectPg(t, s)
	if v, err := simple(c, "SHOW max_stack_depth"); err != nil || v != "2MB" {
		t.Fatalf("SHOW max_stack_depth: %q, %v", v, err)
	}
	q := repeatChain("+", "1", 999)
	if v, err := simple(c, q); err != nil || v != "1000" {
		t.Fatalf("1,000 terms: %q, %v", v, err)
	}
	if _, err := simple(c, "SET max_stack_depth = '100kB'"); err != nil {
		t.Fatal(err)
	}
	_, err := simple(c, q)
	if pe := wantCode(t, "1,000 terms under 100kB", err, "54001"); !strings.Contains(pe.Hint, "(currently 100kB)") {
		t.Errorf("hint %q", pe.Hint)
	}
	_, err = simple(c, "SET max_stack_depth = '50kB'")
	wantCode(t, "SET max_stack_depth = '50kB'", err, "22023")
	if _, err := simple(c, "RESET max_stack_depth"); err != nil {
		t.Fatal(err)
	}
	if v, err := simple(c, q); err != nil || v != "1000" {
		t.Fatalf("1,000 terms after RESET: %q, %v", v, err)
	}
}

// TestParserHugeFlatStatements sends statements as large as a message may
// be but flat: they get a result or 54000, and the server's memory stays
// bounded.
func TestParserHugeFlatStatements(t *testing.T) {
	s := proctest.Start(t, nil)
	c := connectPg(t, s)
	// 100 MB IN list and string literal: over the parser's size limit.
	_, err := simple(c, "SELECT 1 IN ("+strings.Repeat("1,", 50<<20)+"1)")
	wantCode(t, "100 MB IN list", err, "54000")
	_, err = simple(c, "SELECT length('"+strings.Repeat("x", 100<<20)+"')")
	wantCode(t, "100 MB string literal", err, "54000")
	// Within it: 3 million tokens is too many, a 40 MB literal and
	// 100,000 IN values are not.
	_, err = simple(c, "SELECT 1 IN ("+strings.Repeat("1,", 1_500_000)+"1)")
	wantCode(t, "1,500,000-value IN list", err, "54000")
	if v, err := simple(c, "SELECT length('"+strings.Repeat("x", 40<<20)+"')"); err != nil || v != strconv.Itoa(40<<20) {
		t.Errorf("40 MB string literal: %q, %v", v, err)
	}
	if v, err := simple(c, "SELECT 2 IN ("+strings.Repeat("1,", 100_000)+"2)"); err != nil || v != "t" {
		t.Errorf("100,000-value IN list: %q, %v", v, err)
	}
	stillServing(t, s)
	_, peak := s.RSS(t)
	t.Logf("peak RSS %d MB", peak>>20)
	if peak > 1<<30 {
		t.Errorf("peak RSS %d MB", peak>>20)
	}
}

package sql

import (
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

func TestParseCreateTableTypes(t *testing.T) {
	ps, err := Parse(`CREATE TABLE IF NOT EXISTS t (
		id SERIAL PRIMARY KEY, a int8[3][], b bigint[2], c vector(3), d varchar(5) NOT NULL DEFAULT 'x',
		e double precision, f BLOB, g uint8[224][224][3], h real[], i bool, j int2, k bigserial,
		l jsonb, m json, n float4, o text, p float16[4], q bfloat16[2][2], r integer)`)
	if err != nil {
		t.Fatal(err)
	}
	ct := ps[0].Stmt.(*CreateTable)
	if !ct.IfNotExists || ct.Name != "t" {
		t.Fatalf("got %+v", ct)
	}
	want := map[string]string{
		"id": "integer", "a": "int8[3][]", "b": "int64[2]", "c": "vector(3)", "d": "character varying(5)",
		"e": "double precision", "f": "bytea", "g": "uint8[224][224][3]", "h": "float32[]", "i": "boolean",
		"j": "smallint", "k": "bigint", "l": "jsonb", "m": "json", "n": "real", "o": "text",
		"p": "float16[4]", "q": "bfloat16[2][2]", "r": "integer",
	}
	for _, c := range ct.Columns {
		if got := c.Type.String(); got != want[c.Name] {
			t.Errorf("column %s: type %s, want %s", c.Name, got, want[c.Name])
		}
	}
	if c := ct.Columns[0]; !c.Serial || !c.PrimaryKey || !c.NotNull {
		t.Errorf("id: %+v", c)
	}
	if c := ct.Columns[4]; !c.NotNull || c.DefaultSQL != "'x'" {
		t.Errorf("d: %+v", c)
	}
	if ct.Columns[0].Type.Kind != types.Int4 || ct.Columns[11].Type.Kind != types.Int8 || !ct.Columns[11].Serial {
		t.Errorf("serial types wrong")
	}
}

func TestParseUserStatements(t *testing.T) {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)`,
		`SELECT embedding, image, label FROM training_samples WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY RANDOM()`,
	} {
		ps, err := Parse(q)
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ps, _ := Parse(`SELECT embedding, image, label FROM training_samples WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY RANDOM()`)
	sel := ps[0].Stmt.(*Select)
	and, ok := sel.Where.(*AndExpr)
	if !ok || len(and.Args) != 2 {
		t.Fatalf("where: %#v", sel.Where)
	}
	if eq := and.Args[0].(*BinaryExpr); eq.Op != "=" || eq.L.(*BinaryExpr).Op != "->>" {
		t.Errorf("json comparison parsed as %#v", eq)
	}
	if in := and.Args[1].(*InExpr); len(in.List) != 3 || in.Not {
		t.Errorf("IN parsed as %#v", in)
	}
	if f := sel.OrderBy[0].Expr.(*FuncCall); f.Name != "random" {
		t.Errorf("order by %#v", f)
	}
}

func TestParseMultipleStatements(t *testing.T) {
	ps, err := Parse("BEGIN; INSERT INTO t VALUES (1), (2) RETURNING id; UPDATE t SET a = a + 1 WHERE id = 1; DELETE FROM t WHERE a IS NULL; COMMIT")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 {
		t.Fatalf("got %d statements", len(ps))
	}
	if ps[1].SQL != "INSERT INTO t VALUES (1), (2) RETURNING id" {
		t.Errorf("statement text %q", ps[1].SQL)
	}
	if ins := ps[1].Stmt.(*Insert); len(ins.Rows) != 2 || len(ins.Returning) != 1 {
		t.Errorf("insert %+v", ins)
	}
	if ps, err := Parse("  -- only a comment\n"); err != nil || len(ps) != 0 {
		t.Errorf("empty query: %v %d", err, len(ps))
	}
}

func TestParseExpressions(t *testing.T) {
	ps, err := Parse(`SELECT image[1][2][3], cardinality(image), array_length(image, 1), x BETWEEN 1 AND 2,
		name LIKE 'a%', name NOT ILIKE 'b_', meta @> '{"a":1}', meta -> 'k', y IS NOT NULL, NOT z,
		CASE WHEN a THEN 1 ELSE 2 END, '5'::int, -x, 12345678901 FROM t ORDER BY 1 DESC NULLS LAST LIMIT 3 OFFSET 1`)
	if err != nil {
		t.Fatal(err)
	}
	sel := ps[0].Stmt.(*Select)
	if sub := sel.Items[0].Expr.(*SubscriptExpr); len(sub.Indexes) != 3 {
		t.Errorf("subscript %#v", sub)
	}
	if _, ok := sel.Items[3].Expr.(*BetweenExpr); !ok {
		t.Errorf("between %#v", sel.Items[3].Expr)
	}
	if l := sel.Items[5].Expr.(*LikeExpr); !l.Not || !l.ILike {
		t.Errorf("not ilike %#v", l)
	}
	if lit := sel.Items[13].Expr.(*Literal); lit.Kind != LitInt || lit.Text != "12345678901" {
		t.Errorf("big int literal %#v", lit)
	}
	if o := sel.OrderBy[0]; !o.Desc || o.Nulls != 2 {
		t.Errorf("order %+v", o)
	}
	if sel.Limit == nil || sel.Offset == nil {
		t.Errorf("limit/offset missing")
	}
}

func TestParseErrors(t *testing.T) {
	for q, code := range map[string]pgerror.Code{
		"SELEC 1":                        pgerror.SyntaxError,
		"SELECT FROM WHERE":              pgerror.SyntaxError,
		"CREATE UNIQUE INDEX i ON t (a)": pgerror.FeatureNotSupported,
		"SELECT * FROM generate_series(1, 2) WITH ORDINALITY":      pgerror.FeatureNotSupported,
		"WITH d AS (DELETE FROM t RETURNING *) SELECT 1":           pgerror.FeatureNotSupported,
		"CREATE TABLE t (a nosuchtype)":                            pgerror.UndefinedObject,
		"CREATE TABLE t (a vector(0))":                             pgerror.InvalidParameterValue,
		"CREATE TABLE t (a vector(16001))":                         pgerror.InvalidParameterValue,
		"CREATE TABLE t (a time)":                                  pgerror.FeatureNotSupported,
		"SAVEPOINT s":                                              pgerror.FeatureNotSupported,
		"CREATE TABLE t (a int, PRIMARY KEY (a), PRIMARY KEY (a))": pgerror.InvalidTableDefinition,
	} {
		_, err := Parse(q)
		if err == nil {
			t.Errorf("%s: no error", q)
			continue
		}
		if got := pgerror.GetCode(err); got != code {
			t.Errorf("%s: code %s (%v), want %s", q, got, err, code)
		}
	}
}

// TestUnsupportedNamesTheFeature: a 0A000 names what is not supported.
func TestUnsupportedNamesTheFeature(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT ROW(1, 2)":                   "ROW(...) is not supported yet",
		"SELECT 'a' SIMILAR TO 'b'":          "SIMILAR TO is not supported yet",
		"SELECT xmlelement(name a)":          "XML is not supported yet",
		"SELECT a[1:2] FROM (SELECT 1) t(a)": "array slices is not supported yet",
	} {
		_, err := Parse(q)
		if err == nil || !strings.Contains(err.Error(), want) || pgerror.GetCode(err) != pgerror.FeatureNotSupported {
			t.Errorf("%s: %v, want 0A000 %q", q, err, want)
		}
	}
}

// Package tpch_test runs TPC-H at scale factor 0.01 on deeplaked and on
// PostgreSQL 15, from the same generated files, and compares the answers
// of the 22 queries as psql would print them.
package tpch_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/bench/tpch"
	"github.com/deeplaked/deeplaked/bench/tpch/gen"
	"github.com/deeplaked/deeplaked/internal/pgtest"
	"github.com/deeplaked/deeplaked/server"
)

// TestTPCHAgainstPostgres: the 22 queries on the same data give the same
// rows, in the same order, printed the same, on deeplaked and PostgreSQL
// 15.
func TestTPCHAgainstPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads TPC-H twice")
	}
	dir := t.TempDir()
	if _, err := gen.Generate(dir, 0.01, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pgPort := pgtest.Start15(t)
	srv, err := server.Start(ctx, server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	targets := map[string]string{
		"postgres":  "postgres://postgres@127.0.0.1:" + pgPort + "/postgres?sslmode=disable",
		"deeplaked": "postgres://tester@" + srv.Addr() + "/postgres?sslmode=disable",
	}
	conns := map[string]*pgconn.PgConn{}
	for name, dsn := range targets {
		conn, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer conn.Close(ctx)
		conns[name] = conn
		start := time.Now()
		if err := tpch.Load(ctx, conn, dir); err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		t.Logf("%s: loaded in %v", name, time.Since(start).Round(time.Millisecond))
	}
	matched := 0
	for q := 1; q <= tpch.NumQueries; q++ {
		text, err := tpch.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		answers := map[string]string{}
		for name, conn := range conns {
			start := time.Now()
			out, err := run(ctx, conn, text)
			if err != nil {
				t.Fatalf("query %d on %s: %v", q, name, err)
			}
			answers[name] = out
			if name == "deeplaked" {
				t.Logf("query %2d: %v on deeplaked", q, time.Since(start).Round(time.Millisecond))
			}
		}
		if answers["deeplaked"] == answers["postgres"] {
			matched++
			continue
		}
		t.Errorf("query %d: deeplaked answers\n%s\nPostgreSQL\n%s", q, head(answers["deeplaked"]), head(answers["postgres"]))
	}
	t.Logf("%d of %d queries give PostgreSQL's answers", matched, tpch.NumQueries)
}

// run runs a query file's statements and returns the rows of the last
// that has any, as text, one line a row, fields separated by |.
func run(ctx context.Context, conn *pgconn.PgConn, text string) (string, error) {
	var out string
	for _, stmt := range tpch.Statements(text) {
		results, err := conn.Exec(ctx, stmt).ReadAll()
		if err != nil {
			return "", err
		}
		for _, r := range results {
			if r.Err != nil {
				return "", r.Err
			}
			if len(r.FieldDescriptions) == 0 {
				continue
			}
			var b bytes.Buffer
			for _, row := range r.Rows {
				for i, v := range row {
					if i > 0 {
						b.WriteByte('|')
					}
					if v == nil {
						b.WriteString("NULL")
					} else {
						b.Write(v)
					}
				}
				b.WriteByte('\n')
			}
			out = b.String()
		}
	}
	return out, nil
}

func head(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	if len(lines) > 5 {
		lines = append(lines[:5], "...")
	}
	return strings.Join(lines, "\n")
}

package tpch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/bench/tpch/gen"
)

func TestQueryFiles(t *testing.T) {
	files, err := filepath.Glob("queries/*")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for n := 1; n <= NumQueries; n++ {
		want = append(want, fmt.Sprintf("queries/%02d.sql", n))
	}
	if !slices.Equal(files, want) {
		t.Errorf("query files %v, want %v", files, want)
	}
	limits := map[int]string{2: "100", 3: "10", 10: "20", 18: "100", 21: "100"}
	limitRE := regexp.MustCompile(`(?m)^limit ([0-9]+);$`)
	for n := 1; n <= NumQueries; n++ {
		text, err := Query(n)
		if err != nil {
			t.Fatal(err)
		}
		if disk, err := os.ReadFile(fmt.Sprintf("queries/%02d.sql", n)); err != nil || string(disk) != text {
			t.Errorf("Q%d: the embedded text is not the file's (%v)", n, err)
		}
		if !strings.HasSuffix(strings.TrimSpace(text), ";") {
			t.Errorf("Q%d: does not end with ';'", n)
		}
		if regexp.MustCompile(`:[0-9]|\[[A-Z]`).MatchString(text) {
			t.Errorf("Q%d: a substitution parameter is left", n)
		}
		stmts := Statements(text)
		var kinds []string
		for _, s := range stmts {
			kinds = append(kinds, strings.Join(strings.Fields(s)[:2], " "))
		}
		wantKinds := []string{"select " + strings.Fields(stmts[0])[1]}
		if n == 15 {
			wantKinds = []string{"create view", "select s_suppkey,", "drop view"}
		}
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("Q%d: statements %q, want %q", n, kinds, wantKinds)
		}
		var limit string
		if m := limitRE.FindStringSubmatch(text); m != nil {
			limit = m[1]
		}
		if limit != limits[n] {
			t.Errorf("Q%d: limit %q, want %q", n, limit, limits[n])
		}
	}
}

func TestSchema(t *testing.T) {
	var tables []string
	for _, s := range Statements(Schema) {
		f := strings.Fields(s)
		if len(f) < 3 || f[0] != "create" || f[1] != "table" || !strings.Contains(s, "primary key (") {
			t.Errorf("not a CREATE TABLE with a primary key: %s", s)
			continue
		}
		tables = append(tables, f[2])
	}
	if !slices.Equal(tables, gen.Tables) {
		t.Errorf("tables %v, want %v", tables, gen.Tables)
	}
}

func TestStatements(t *testing.T) {
	got := Statements("-- a; comment\nselect 'a;''b' from x; ;\n select 2 -- c;\n")
	want := []string{"select 'a;''b' from x", "select 2"}
	if !slices.Equal(got, want) {
		t.Errorf("Statements = %q, want %q", got, want)
	}
}

// TestPostgres loads scale factor 0.01 into the PostgreSQL server of
// TPCH_PG_DSN, in a schema of its own that it drops after, and runs the 22
// queries. It checks the row counts that the data fix whatever the
// generator's random draws, and query 6's sum against one made here.
func TestPostgres(t *testing.T) {
	dsn := os.Getenv("TPCH_PG_DSN")
	if dsn == "" {
		t.Skip("TPCH_PG_DSN is not set: not loading SF 0.01 into PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const schema = "tpch_sf001_test"
	exec("drop schema if exists " + schema + " cascade")
	exec("create schema " + schema)
	t.Cleanup(func() { conn.Exec(context.Background(), "drop schema if exists "+schema+" cascade") })
	exec("set search_path to " + schema)
	for _, s := range Statements(Schema) {
		exec(s)
	}

	dir := t.TempDir()
	start := time.Now()
	if _, err := gen.Generate(dir, 0.01, gen.Options{}); err != nil {
		t.Fatal(err)
	}
	generated := time.Since(start)
	start = time.Now()
	for _, table := range gen.Tables {
		f, err := os.Open(filepath.Join(dir, table+".tbl"))
		if err != nil {
			t.Fatal(err)
		}
		tag, err := conn.PgConn().CopyFrom(ctx, f, "copy "+table+" from stdin with (format csv, delimiter '|')")
		f.Close()
		if err != nil {
			t.Fatalf("copy %s: %v", table, err)
		}
		if want := gen.Rows(0.01, table); table != "lineitem" && tag.RowsAffected() != want {
			t.Errorf("copy %s: %d rows, want %d", table, tag.RowsAffected(), want)
		}
	}
	exec("analyze")
	t.Logf("SF 0.01: generated in %s, loaded in %s", generated.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Row counts the data fix: Q1 has the four (flag, status) groups,
	// Q4 the five priorities, Q12 the two modes, Q6, Q14, Q17 and Q19 one
	// row each.
	wantRows := map[int]int{1: 4, 4: 5, 6: 1, 12: 2, 14: 1, 17: 1, 19: 1}
	for n := 1; n <= NumQueries; n++ {
		text, _ := Query(n)
		start := time.Now()
		var rows [][]any
		for _, s := range Statements(text) {
			if !strings.HasPrefix(s, "select") {
				exec(s)
				continue
			}
			r, err := conn.Query(ctx, s, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("Q%d: %v", n, err)
			}
			rows, err = pgx.CollectRows(r, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatalf("Q%d: %v", n, err)
			}
		}
		t.Logf("Q%d: %d rows in %s", n, len(rows), time.Since(start).Round(time.Millisecond))
		if want, ok := wantRows[n]; ok && len(rows) != want {
			t.Errorf("Q%d: %d rows, want %d", n, len(rows), want)
		}
		if n == 6 {
			var got string
			if err := conn.QueryRow(ctx, "select revenue::text from ("+Statements(text)[0]+") q").Scan(&got); err != nil {
				t.Fatalf("Q6: %v", err)
			}
			if want := q6(t, filepath.Join(dir, "lineitem.tbl")); got != want {
				t.Errorf("Q6: revenue %s, want %s", got, want)
			}
		}
	}
}

// q6 computes query 6 from lineitem.tbl in integers: the sum of
// l_extendedprice × l_discount, as the text of a decimal of scale 4.
func q6(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hundredths := func(s string) int64 {
		n, err := strconv.ParseInt(strings.Replace(s, ".", "", 1), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var sum int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.Split(sc.Text(), "|")
		q, _ := strconv.Atoi(l[4])
		d := hundredths(l[6])
		if l[10] >= "1994-01-01" && l[10] < "1995-01-01" && d >= 5 && d <= 7 && q < 24 {
			sum += hundredths(l[5]) * d
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d.%04d", sum/10000, sum%10000)
}

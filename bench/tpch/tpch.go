// Package tpch holds the TPC-H benchmark's schema (schema.sql) and its 22
// queries (queries/NN.sql) with the specification's validation
// parameters, in PostgreSQL's syntax. Package gen generates the data.
package tpch

import (
	"embed"
	"fmt"
	"strings"
)

// Schema is the text of schema.sql: the eight CREATE TABLE statements.
//
//go:embed schema.sql
var Schema string

//go:embed queries/*.sql
var queries embed.FS

// NumQueries is the number of TPC-H queries.
const NumQueries = 22

// Query returns the text of query n, from 1 to NumQueries.
func Query(n int) (string, error) {
	b, err := queries.ReadFile(fmt.Sprintf("queries/%02d.sql", n))
	return string(b), err
}

// Statements splits SQL text into its statements, each without its
// terminating ';' and without comments; blank statements are dropped.
// It knows the '--' comments and the single-quoted strings of these files,
// nothing more.
func Statements(sql string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			cur.WriteByte('\n')
		case c == '\'':
			j := i + 1
			for j < len(sql) && (sql[j] != '\'' || j+1 < len(sql) && sql[j+1] == '\'') {
				if sql[j] == '\'' {
					j++
				}
				j++
			}
			cur.WriteString(sql[i:min(j+1, len(sql))])
			i = j
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

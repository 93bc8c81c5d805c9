// Package sqllogic runs sqllogictest files against a PostgreSQL-protocol
// server.
//
// The file format is SQLite's sqllogictest: records separated by blank lines,
// each one of
//
//	statement ok
//	statement error
//	statement error pgcode 42P01 [regexp]
//	query <types> [nosort|rowsort|valuesort] [label]
//	hash-threshold N
//	halt
//
// optionally preceded by `skipif <engine>` / `onlyif <engine>` lines. Lines
// starting with '#' are comments. A query's SQL is followed by a `----` line
// and the expected values, one per line (several values per line separated by
// whitespace are accepted too), or by a single `N values hashing to <md5>`
// line. `pgcode` is this project's extension: the SQLSTATE of the error must
// match.
//
// The planner is tested by such files too: a rule's test is a query whose
// EXPLAIN output the file keeps (EXPLAIN VERBOSE where the columns a scan
// or a join reads matter), not a plan tree built in Go. They are the
// testdata/plan_*_deeplaked.test files and others named *_deeplaked.test
// (join_order, scalar_agg_join, exists_join, vector_search, ...). A file
// whose plans have aggregates sets max_parallel_workers_per_gather to 0
// near its top, so that they do not depend on the machine's cores
// (parallel_deeplaked.test tests the parallel plans). To make or update
// one, give a new query an empty section (its "----" line, then a blank
// line), or change the planner, and run
//
//	go test ./test/sqllogic -run 'TestSQLLogic/memory/plan_join' -rewrite
//
// which writes what the server returned into each failing query's section
// (Rewrite), on the memory backend; then read the diff.
package sqllogic

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// RecordKind says what a record does.
type RecordKind int

const (
	// StatementOK runs SQL that must succeed.
	StatementOK RecordKind = iota + 1
	// StatementError runs SQL that must fail (with ErrCode, when set).
	StatementError
	// Query runs SQL and compares its rows with the expected values.
	Query
	// HashThreshold sets the number of values above which results are hashed.
	HashThreshold
	// Halt stops the file.
	Halt
)

// String returns the directive that introduces the kind.
func (k RecordKind) String() string {
	switch k {
	case StatementOK:
		return "statement ok"
	case StatementError:
		return "statement error"
	case Query:
		return "query"
	case HashThreshold:
		return "hash-threshold"
	case Halt:
		return "halt"
	}
	return fmt.Sprintf("RecordKind(%d)", int(k))
}

// SortMode says how a query's values are ordered before comparison.
type SortMode int

const (
	// NoSort compares values in the order the server returns them.
	NoSort SortMode = iota + 1
	// RowSort sorts rows, comparing their formatted values column by column.
	RowSort
	// ValueSort sorts all values individually, ignoring row boundaries.
	ValueSort
)

// String returns the mode's name in query headers.
func (m SortMode) String() string {
	switch m {
	case NoSort:
		return "nosort"
	case RowSort:
		return "rowsort"
	case ValueSort:
		return "valuesort"
	}
	return fmt.Sprintf("SortMode(%d)", int(m))
}

// Condition is a skipif or onlyif line in front of a record.
type Condition struct {
	// Only is true for onlyif, false for skipif.
	Only   bool
	Engine string
}

// Record is one entry of a sqllogictest file.
type Record struct {
	Kind RecordKind
	// Line is the 1-based line of the record's directive.
	Line       int
	Conditions []Condition
	// SQL is the statement or query text, lines joined with "\n".
	SQL string

	// ErrCode is the SQLSTATE a StatementError must carry ("" accepts any).
	ErrCode string
	// ErrMatch, when not nil, must match a StatementError's message.
	ErrMatch *regexp.Regexp

	// Types holds one of 'I', 'R', 'T' per result column of a Query.
	Types string
	Sort  SortMode
	// Label names a Query whose results must equal those of every other
	// query with the same label.
	Label string
	// Expected holds the lines after "----", as written.
	Expected []string
	// ResultLine is the line after a query's "----", where Expected
	// starts; 0 when the query has no "----".
	ResultLine int
	// HashCount and Hash are set when Expected is "N values hashing to H".
	HashCount int
	Hash      string

	// Threshold is the argument of a HashThreshold record.
	Threshold int
}

// Hashed reports whether the record expects a hash instead of values.
func (r *Record) Hashed() bool { return r.Hash != "" }

// File is a parsed sqllogictest file.
type File struct {
	Name    string
	Records []Record
}

// ParseFile reads and parses the sqllogictest file at path.
func ParseFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f)
}

var hashLine = regexp.MustCompile(`^(\d+) values hashing to ([0-9a-fA-F]{32})$`)

// Parse parses a sqllogictest file; name is used in error messages.
func Parse(name string, src io.Reader) (*File, error) {
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	p := parser{name: name, sc: sc}
	file := &File{Name: name}
	for {
		rec, ok, err := p.record()
		if err != nil {
			return nil, err
		}
		if !ok {
			return file, nil
		}
		file.Records = append(file.Records, rec)
	}
}

type parser struct {
	name   string
	sc     *bufio.Scanner
	lineNo int
}

func (p *parser) next() (string, bool) {
	if !p.sc.Scan() {
		return "", false
	}
	p.lineNo++
	return strings.TrimRight(p.sc.Text(), "\r"), true
}

func (p *parser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

func isBlank(line string) bool { return strings.TrimSpace(line) == "" }

func isComment(line string) bool { return strings.HasPrefix(line, "#") }

// directiveFields splits a directive line into fields, dropping a trailing
// "# comment".
func directiveFields(line string) []string {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	return strings.Fields(line)
}

// record parses the next record; ok is false at the end of the input.
func (p *parser) record() (rec Record, ok bool, err error) {
	// Skip blank lines and comments between records.
	var line string
	for {
		l, more := p.next()
		if !more {
			return Record{}, false, p.sc.Err()
		}
		if isBlank(l) || isComment(l) {
			continue
		}
		line = l
		break
	}
	for {
		fields := directiveFields(line)
		if len(fields) == 0 {
			return Record{}, false, p.errorf(p.lineNo, "empty directive %q", line)
		}
		switch fields[0] {
		case "skipif", "onlyif":
			if len(fields) < 2 {
				return Record{}, false, p.errorf(p.lineNo, "%s needs an engine name", fields[0])
			}
			rec.Conditions = append(rec.Conditions, Condition{Only: fields[0] == "onlyif", Engine: fields[1]})
			l, more := p.next()
			if !more || isBlank(l) {
				return Record{}, false, p.errorf(p.lineNo, "%s is not followed by a record", fields[0])
			}
			line = l
			continue
		case "halt":
			rec.Kind, rec.Line = Halt, p.lineNo
			return rec, true, nil
		case "hash-threshold":
			if len(fields) != 2 {
				return Record{}, false, p.errorf(p.lineNo, "usage: hash-threshold N")
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil || n < 0 {
				return Record{}, false, p.errorf(p.lineNo, "bad hash-threshold %q", fields[1])
			}
			rec.Kind, rec.Line, rec.Threshold = HashThreshold, p.lineNo, n
			return rec, true, nil
		case "statement":
			rec.Line = p.lineNo
			if err := p.statementHeader(&rec, line, fields); err != nil {
				return Record{}, false, err
			}
			sql, sep := p.sqlText()
			if sep {
				return Record{}, false, p.errorf(rec.Line, "statement has a ---- results section")
			}
			if sql == "" {
				return Record{}, false, p.errorf(rec.Line, "statement without SQL")
			}
			rec.SQL = sql
			return rec, true, nil
		case "query":
			rec.Line = p.lineNo
			if err := p.queryHeader(&rec, fields); err != nil {
				return Record{}, false, err
			}
			sql, sep := p.sqlText()
			if sql == "" {
				return Record{}, false, p.errorf(rec.Line, "query without SQL")
			}
			rec.SQL = sql
			if sep {
				rec.ResultLine = p.lineNo + 1
				rec.Expected = p.expected()
			}
			if len(rec.Expected) == 1 {
				if m := hashLine.FindStringSubmatch(strings.TrimSpace(rec.Expected[0])); m != nil {
					rec.HashCount, _ = strconv.Atoi(m[1])
					rec.Hash = strings.ToLower(m[2])
				}
			}
			return rec, true, nil
		default:
			return Record{}, false, p.errorf(p.lineNo, "unknown directive %q", fields[0])
		}
	}
}

func (p *parser) statementHeader(rec *Record, line string, fields []string) error {
	if len(fields) < 2 {
		return p.errorf(p.lineNo, "usage: statement ok|error [pgcode XXXXX [regexp]]")
	}
	switch fields[1] {
	case "ok":
		if len(fields) != 2 {
			return p.errorf(p.lineNo, "unexpected text after statement ok")
		}
		rec.Kind = StatementOK
		return nil
	case "error":
		rec.Kind = StatementError
	default:
		return p.errorf(p.lineNo, "unknown statement kind %q", fields[1])
	}
	if len(fields) == 2 {
		return nil
	}
	if fields[2] != "pgcode" || len(fields) < 4 {
		return p.errorf(p.lineNo, "usage: statement error pgcode XXXXX [regexp]")
	}
	code := fields[3]
	if len(code) != 5 {
		return p.errorf(p.lineNo, "bad SQLSTATE %q", code)
	}
	rec.ErrCode = strings.ToUpper(code)
	// The regexp is the rest of the raw line after the code, so that it may
	// hold spaces and '#'.
	rest := line[strings.Index(line, code)+len(code):]
	if rest = strings.TrimSpace(rest); rest != "" {
		re, err := regexp.Compile(rest)
		if err != nil {
			return p.errorf(p.lineNo, "bad error regexp: %v", err)
		}
		rec.ErrMatch = re
	}
	return nil
}

func (p *parser) queryHeader(rec *Record, fields []string) error {
	rec.Kind = Query
	rec.Sort = NoSort
	if len(fields) < 2 {
		return p.errorf(p.lineNo, "usage: query <types> [nosort|rowsort|valuesort] [label]")
	}
	rec.Types = fields[1]
	for _, c := range rec.Types {
		if c != 'I' && c != 'R' && c != 'T' {
			return p.errorf(p.lineNo, "bad column type %q in %q (want I, R or T)", c, rec.Types)
		}
	}
	rest := fields[2:]
	if len(rest) > 0 {
		switch rest[0] {
		case "nosort":
			rec.Sort, rest = NoSort, rest[1:]
		case "rowsort":
			rec.Sort, rest = RowSort, rest[1:]
		case "valuesort":
			rec.Sort, rest = ValueSort, rest[1:]
		}
	}
	switch len(rest) {
	case 0:
	case 1:
		rec.Label = rest[0]
	default:
		return p.errorf(p.lineNo, "unexpected text %q in query header", strings.Join(rest, " "))
	}
	return nil
}

// sqlText reads SQL lines up to a blank line, the end of input or a "----"
// line; sep reports the latter.
func (p *parser) sqlText() (sql string, sep bool) {
	var b strings.Builder
	for {
		l, more := p.next()
		if !more || isBlank(l) {
			return b.String(), false
		}
		if strings.TrimSpace(l) == "----" {
			return b.String(), true
		}
		if isComment(l) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
}

// expected reads result lines up to a blank line or the end of input.
func (p *parser) expected() []string {
	var lines []string
	for {
		l, more := p.next()
		if !more || isBlank(l) {
			return lines
		}
		lines = append(lines, l)
	}
}

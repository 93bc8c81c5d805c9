package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Runner executes sqllogictest files over one connection, record after
// record, with the simple query protocol, comparing the raw text values the
// server sends.
type Runner struct {
	// Conn is the connection every record runs on; transaction state carries
	// from one record to the next.
	Conn *pgconn.PgConn
	// Engines are the names that skipif/onlyif lines match.
	Engines []string
	// RecordTimeout bounds each record; zero means no limit beyond ctx.
	RecordTimeout time.Duration
	// MaxShown caps the values printed for one failure (default 50).
	MaxShown int
}

// Failure describes one record that did not behave as the file says.
type Failure struct {
	File     string
	Line     int
	SQL      string
	Expected string
	Got      string
	// Result is set for a query that returned other values than its
	// record expects: the lines of the expected section that would
	// match them, a value a line, or the hash line of a record that
	// expects a hash (Rewrite writes them). NB: empty, not nil, for no
	// rows.
	Result []string
}

// String renders the failure as "file:line", the SQL, and expected vs got.
func (f Failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:\n", f.File, f.Line)
	writeIndented(&b, f.SQL)
	b.WriteString("expected:\n")
	writeIndented(&b, f.Expected)
	b.WriteString("got:\n")
	writeIndented(&b, f.Got)
	return b.String()
}

func writeIndented(b *strings.Builder, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// Result sums up a file's run.
type Result struct {
	Passed   int
	Skipped  int
	Failures []Failure
	// Halted is true when a halt record ended the file early.
	Halted bool
}

// OK reports whether every record that ran passed.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

// fileRun is the state of one file's run.
type fileRun struct {
	r         *Runner
	file      *File
	threshold int
	labels    map[string]string // label → hash of the values
	res       Result
}

// Run executes every record of f and returns what passed and what failed.
// It stops early at a halt record or when the connection is lost.
func (r *Runner) Run(ctx context.Context, f *File) Result {
	fr := &fileRun{r: r, file: f, labels: map[string]string{}}
	for i := range f.Records {
		rec := &f.Records[i]
		if !r.applies(rec) {
			fr.res.Skipped++
			continue
		}
		switch rec.Kind {
		case Halt:
			fr.res.Halted = true
			return fr.res
		case HashThreshold:
			fr.threshold = rec.Threshold
			continue
		}
		fr.run(ctx, rec)
		if r.Conn.IsClosed() {
			fr.fail(rec, "an open connection", "connection lost; remaining records not run")
			return fr.res
		}
	}
	return fr.res
}

// applies evaluates the skipif/onlyif conditions of rec.
func (r *Runner) applies(rec *Record) bool {
	for _, c := range rec.Conditions {
		if slices.Contains(r.Engines, c.Engine) != c.Only {
			return false
		}
	}
	return true
}

func (fr *fileRun) fail(rec *Record, expected, got string) {
	fr.res.Failures = append(fr.res.Failures, Failure{
		File: fr.file.Name, Line: rec.Line, SQL: rec.SQL, Expected: expected, Got: got,
	})
}

// setResult sets the Result of the failure just added.
func (fr *fileRun) setResult(lines []string) {
	fr.res.Failures[len(fr.res.Failures)-1].Result = lines
}

func (fr *fileRun) run(ctx context.Context, rec *Record) {
	if fr.r.RecordTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fr.r.RecordTimeout)
		defer cancel()
	}
	rows, ncols, err := fr.r.exec(ctx, rec.SQL)
	switch rec.Kind {
	case StatementOK:
		if err != nil {
			fr.fail(rec, "success", describeErr(err))
			return
		}
	case StatementError:
		if err == nil {
			fr.fail(rec, expectedErr(rec), "success")
			return
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			fr.fail(rec, expectedErr(rec), describeErr(err))
			return
		}
		if rec.ErrCode != "" && pgErr.Code != rec.ErrCode {
			fr.fail(rec, expectedErr(rec), describeErr(err))
			return
		}
		if rec.ErrMatch != nil && !rec.ErrMatch.MatchString(pgErr.Message) {
			fr.fail(rec, expectedErr(rec), describeErr(err))
			return
		}
	case Query:
		if err != nil {
			fr.fail(rec, "rows", describeErr(err))
			return
		}
		fr.checkQuery(rec, rows, ncols)
		return
	}
	fr.res.Passed++
}

func expectedErr(rec *Record) string {
	s := "an error"
	if rec.ErrCode != "" {
		s += " with SQLSTATE " + rec.ErrCode
	}
	if rec.ErrMatch != nil {
		s += " matching " + rec.ErrMatch.String()
	}
	return s
}

func describeErr(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Sprintf("ERROR %s: %s", pgErr.Code, pgErr.Message)
	}
	return "error: " + err.Error()
}

func (fr *fileRun) checkQuery(rec *Record, rows [][][]byte, ncols int) {
	if ncols != len(rec.Types) {
		fr.fail(rec, fmt.Sprintf("%d columns (%s)", len(rec.Types), rec.Types),
			fmt.Sprintf("%d columns", ncols))
		return
	}
	values := make([]string, 0, len(rows)*ncols)
	for _, row := range rows {
		for j, v := range row {
			values = append(values, FormatValue(rec.Types[j], v))
		}
	}
	SortValues(rec.Sort, values, ncols)

	var hash string
	if rec.Hashed() || rec.Label != "" || (fr.threshold > 0 && len(values) > fr.threshold) {
		hash = Hash(values)
	}
	if rec.Hashed() {
		if rec.HashCount != len(values) || rec.Hash != hash {
			fr.fail(rec, rec.Expected[0], fr.show(values, hash))
			fr.setResult([]string{fmt.Sprintf("%d values hashing to %s", len(values), hash)})
			return
		}
	} else if !matchValues(rec.Expected, values) {
		fr.fail(rec, strings.Join(rec.Expected, "\n"), fr.show(values, hash))
		fr.setResult(append([]string{}, values...))
		return
	}
	if rec.Label != "" {
		if prev, ok := fr.labels[rec.Label]; ok && prev != hash {
			fr.fail(rec, "the same values as earlier queries labelled "+rec.Label,
				fr.show(values, hash))
			return
		}
		fr.labels[rec.Label] = hash
	}
	fr.res.Passed++
}

// show renders values for a failure message, with their hash when the file
// would hash them.
func (fr *fileRun) show(values []string, hash string) string {
	max := fr.r.MaxShown
	if max <= 0 {
		max = 50
	}
	var b strings.Builder
	if hash != "" {
		fmt.Fprintf(&b, "%d values hashing to %s\n", len(values), hash)
	}
	for i, v := range values {
		if i == max {
			fmt.Fprintf(&b, "... (%d more)\n", len(values)-max)
			break
		}
		b.WriteString(v)
		b.WriteByte('\n')
	}
	if len(values) == 0 {
		b.WriteString("(no rows)\n")
	}
	return b.String()
}

// exec runs sql with the simple protocol and returns the rows of its last
// result set that has columns, as the raw text the server sent. A result set
// with no rows still counts, by its row description.
func (r *Runner) exec(ctx context.Context, sql string) (rows [][][]byte, ncols int, err error) {
	mrr := r.Conn.Exec(ctx, sql)
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		var set [][][]byte
		for rr.NextRow() {
			vals := rr.Values()
			row := make([][]byte, len(vals))
			for i, v := range vals {
				if v != nil {
					row[i] = append(make([]byte, 0, len(v)), v...)
				}
			}
			set = append(set, row)
		}
		fields := len(rr.FieldDescriptions())
		if _, err := rr.Close(); err != nil {
			_ = mrr.Close()
			return nil, 0, err
		}
		if fields > 0 {
			rows, ncols = set, fields
		}
	}
	if err := mrr.Close(); err != nil {
		return nil, 0, err
	}
	return rows, ncols, nil
}

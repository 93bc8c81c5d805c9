package exec

import (
	"bufio"
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// textReader reads rows in COPY's text and CSV formats, following
// PostgreSQL's rules (copyfromparse.c): a row is one line; in text format
// a backslash escapes the next character (a newline too) and \N is NULL;
// in CSV a quoted field may span lines and an unquoted empty field is
// NULL. A line holding only \. ends the data.
//
// It reads either the client's stream (br) or a block of it that holds
// whole rows (block), which is how rows are parsed in parallel: the
// statement (cf) is only read, and the rows go to target.
type textReader struct {
	cf   *copyFrom
	br   *bufio.Reader
	opts plan.CopyOptions
	csv  bool

	// block is the input when br is nil; pos is where the next line
	// starts. plain marks a block without a quote or backslash: a line is
	// a row, and a field is the bytes between two delimiters.
	block []byte
	pos   int
	plain bool
	// target holds the Vecs of the input fields, in field order.
	target []*types.Vec

	// physical counts the physical lines read, logical the rows (and
	// header): PostgreSQL numbers text-format lines by the latter, CSV
	// lines by the former (a quoted newline counts, an escaped one in text
	// does not). line is the current line's number as PostgreSQL counts.
	physical, logical int64
	line              int64
	// done is set at the end of the data.
	done bool
	// spill holds a physical line longer than the read buffer; joined a
	// logical line that spans physical lines.
	spill, joined []byte

	// vals holds the current row's field values, unescaped, back to back
	// (in a plain block, the fields are in the line itself).
	vals   []byte
	fields []textField
	// checked is set when the values are valid UTF-8 without NUL, as
	// their line was: CSV's and a plain block's (quotes and delimiters are
	// ASCII), not those of text with escapes.
	checked bool
}

// textField is one field of the current row: vals[start:end], or NULL.
type textField struct {
	start, end int
	null       bool
}

// newTextReader returns a reader of the stream br into cf's batch.
func newTextReader(cf *copyFrom, br *bufio.Reader) *textReader {
	o := cf.n.Options
	// NB: vals is never nil, so that an empty value shows in an error's
	// context as "" (a nil one shows none).
	return &textReader{cf: cf, br: br, opts: o, csv: o.Format == plan.CopyCSV, target: cf.target, vals: make([]byte, 0, 64)}
}

// reset makes d read block, whose first line follows physical physical
// lines and logical logical ones, into target; plain marks a block
// without a quote or backslash.
func (d *textReader) reset(block []byte, plain bool, physical, logical int64, target []*types.Vec) {
	d.br, d.block, d.pos, d.done, d.plain = nil, block, 0, false, plain
	d.physical, d.logical, d.target = physical, logical, target
	o := d.opts
	d.checked = (d.csv || plain) && o.Delimiter < utf8.RuneSelf && o.Quote < utf8.RuneSelf && o.Escape < utf8.RuneSelf
}

// lineError adds the context of the current line to err; text nil shows
// none.
func (d *textReader) lineError(err error, text []byte) error {
	return d.cf.lineErrorAt(d.line, err, text)
}

// readHeader skips or checks the header line.
func (d *textReader) readHeader() error {
	if d.opts.Header == plan.HeaderNone {
		return nil
	}
	line, ok, err := d.readLine()
	if err != nil || !ok || d.opts.Header == plan.HeaderSkip {
		return err
	}
	if err := d.split(line); err != nil {
		return d.lineError(err, line)
	}
	cf := d.cf
	if len(d.fields) != len(d.target) {
		return d.lineError(pgerror.Newf(pgerror.BadCopyFileFormat, "wrong number of fields in header line: got %d, expected %d",
			len(d.fields), len(d.target)), line)
	}
	for i, f := range d.fields {
		want := cf.n.Table.Columns[cf.n.Target[i]].Name
		switch got := d.vals[f.start:f.end]; {
		case f.null:
			return d.lineError(pgerror.Newf(pgerror.BadCopyFileFormat, "column name mismatch in header line field %d: got null value (\"%s\"), expected \"%s\"",
				i+1, d.opts.Null, want), line)
		case string(got) != want:
			return d.lineError(pgerror.Newf(pgerror.BadCopyFileFormat, "column name mismatch in header line field %d: got \"%s\", expected \"%s\"",
				i+1, got, want), line)
		}
	}
	return nil
}

// readRow reads one line into the target columns.
func (d *textReader) readRow() (bool, error) {
	line, ok, err := d.readLine()
	if err != nil || !ok {
		return false, err
	}
	cf := d.cf
	vals := line
	if d.plain {
		d.splitPlain(line)
	} else {
		if err := d.split(line); err != nil {
			return false, d.lineError(err, line)
		}
		vals = d.vals
	}
	if len(d.fields) > len(d.target) {
		return false, d.lineError(pgerror.New(pgerror.BadCopyFileFormat, "extra data after last expected column"), line)
	}
	for i, v := range d.target {
		if i >= len(d.fields) {
			name := cf.n.Table.Columns[cf.n.Target[i]].Name
			return false, d.lineError(pgerror.Newf(pgerror.BadCopyFileFormat, "missing data for column \"%s\"", name), line)
		}
		f := d.fields[i]
		if f.null {
			v.AppendNull()
			continue
		}
		val := vals[f.start:f.end]
		var err error
		if d.checked {
			err = appendChecked(v, val)
		} else {
			err = cf.appendText(v, val)
		}
		if err != nil {
			return false, cf.columnErrorAt(d.line, err, i, val)
		}
	}
	return true, nil
}

// readLine returns the next logical line without its line ending, valid
// until the next call; ok is false at the end of the data. It sets the
// current line number as PostgreSQL counts.
func (d *textReader) readLine() (line []byte, ok bool, err error) {
	if d.done {
		return nil, false, nil
	}
	if line, err = d.physicalLine(); err != nil {
		return nil, false, err
	}
	if line == nil {
		d.done = true
		return nil, false, nil
	}
	if d.plain {
		// Nothing escapes or quotes the newline, and no end marker.
		d.setLine()
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if err := types.ValidUTF8(line); err != nil {
			return nil, false, d.lineError(err, nil)
		}
		return line, true, nil
	}
	if d.csv && (string(line) == "\\.\n" || string(line) == "\\.\r\n" || string(line) == `\.`) {
		return nil, false, d.endOfData()
	}
	var sc lineScan
	joined := false
	for {
		more, marker, err := d.scan(&sc, line)
		if err != nil {
			d.setLine()
			return nil, false, d.lineError(err, nil)
		}
		if marker >= 0 {
			// Text format: \. ends the data; what precedes it on the line
			// is the last row. NB: line may alias the read buffer, which
			// endOfData reuses.
			d.joined = append(d.joined[:0], line[:marker]...)
			line = d.joined
			if err := d.endOfData(); err != nil {
				return nil, false, err
			}
			if len(line) == 0 {
				return nil, false, nil
			}
			break
		}
		if !more {
			break
		}
		if !joined {
			d.joined = append(d.joined[:0], line...)
			joined = true
		}
		next, err := d.physicalLine()
		if err != nil {
			return nil, false, err
		}
		if next == nil {
			break // an unterminated quoted field; split reports it
		}
		d.joined = append(d.joined, next...)
		if len(d.joined) > maxCopyRow {
			return nil, false, rowTooLong()
		}
		line = d.joined
	}
	d.setLine()
	if !sc.inQuote { // in an unterminated quoted field the newline is data
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
	}
	if err := types.ValidUTF8(line); err != nil {
		return nil, false, d.lineError(err, nil)
	}
	return line, true, nil
}

// setLine sets the current line number at the end of a logical line.
func (d *textReader) setLine() {
	d.logical++
	d.line = d.logical
	if d.csv {
		d.line = d.physical
	}
}

// endOfData marks the end of the data and discards the rest of the stream
// up to its end, as PostgreSQL does after \. (In a block, the rest of the
// block: whoever cut the stream into blocks discards the rest of it.)
func (d *textReader) endOfData() error {
	d.done = true
	if d.br == nil {
		d.pos = len(d.block)
		return nil
	}
	_, err := io.Copy(io.Discard, d.br)
	return err
}

// physicalLine returns the next physical line with its '\n' (none at the
// end of the stream), or nil at the end. It aliases the block, or the
// read buffer or spill (for a line longer than the buffer) until the next
// call.
func (d *textReader) physicalLine() ([]byte, error) {
	if d.br == nil {
		rest := d.block[d.pos:]
		if len(rest) == 0 {
			return nil, nil
		}
		n := bytes.IndexByte(rest, '\n') + 1
		if n == 0 {
			n = len(rest)
		}
		if n > maxCopyRow {
			return nil, rowTooLong()
		}
		d.pos += n
		d.physical++
		return rest[:n], nil
	}
	chunk, err := d.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
	case err == nil || err == io.EOF && len(chunk) > 0:
		d.physical++
		return chunk, nil
	case err == io.EOF:
		return nil, nil
	default:
		return nil, err
	}
	d.spill = append(d.spill[:0], chunk...)
	for {
		chunk, err = d.br.ReadSlice('\n')
		d.spill = append(d.spill, chunk...)
		if len(d.spill) > maxCopyRow {
			return nil, rowTooLong()
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		d.physical++
		return d.spill, nil
	}
}

func rowTooLong() error {
	return pgerror.Newf(pgerror.ProgramLimitExceeded, "COPY row is longer than %d MB", maxCopyRow>>20)
}

// lineScan is where scan left off in a logical line.
type lineScan struct {
	pos              int
	inQuote, lastEsc bool
}

// scan looks through line from sc.pos for what decides where the row
// ends: more reports that it goes on past the line's '\n' (escaped in
// text, inside quotes in CSV); marker is the offset of a \. end-of-data
// marker in text format, or -1.
func (d *textReader) scan(sc *lineScan, line []byte) (more bool, marker int, err error) {
	defer func() { sc.pos = len(line) }()
	if !d.csv {
		for i := sc.pos; i < len(line); i++ {
			k := bytes.IndexByte(line[i:], '\\')
			if k < 0 || i+k+1 >= len(line) {
				return false, -1, nil
			}
			i += k + 1 // at the escaped byte; the loop steps past it
			switch line[i] {
			case '\n':
				return true, -1, nil
			case '.':
				if rest := string(line[i+1:]); rest != "" && rest != "\n" && rest != "\r\n" {
					return false, -1, pgerror.New(pgerror.BadCopyFileFormat, "end-of-copy marker corrupt")
				}
				return false, i - 1, nil
			}
		}
		return false, -1, nil
	}
	// As PostgreSQL's line reader: quote toggles, and an escape inside
	// quotes protects the next quote; an escape equal to the quote is just
	// the quote.
	quote, esc := d.opts.Quote, d.opts.Escape
	if esc == quote {
		esc = 0
	}
	for _, c := range line[sc.pos:] {
		if sc.inQuote && c == esc {
			sc.lastEsc = !sc.lastEsc
		}
		if c == quote && !sc.lastEsc {
			sc.inQuote = !sc.inQuote
		}
		if c != esc {
			sc.lastEsc = false
		}
	}
	return sc.inQuote && line[len(line)-1] == '\n', -1, nil
}

// split cuts a line into fields.
func (d *textReader) split(line []byte) error {
	d.vals, d.fields = d.vals[:0], d.fields[:0]
	if d.csv {
		return d.splitCSV(line)
	}
	d.splitText(line)
	return nil
}

// splitPlain cuts a line of a plain block at the delimiter: the fields
// index line. As in splitText and splitCSV, a field equal to the NULL
// string is NULL (in CSV it is unquoted: nothing is quoted here).
func (d *textReader) splitPlain(line []byte) {
	d.fields = d.fields[:0]
	delim, start := d.opts.Delimiter, 0
	// NB: a loop, not bytes.IndexByte: fields are short, and the call
	// costs more than the search.
	for i := 0; i < len(line); i++ {
		if line[i] == delim {
			d.fields = append(d.fields, textField{start: start, end: i, null: string(line[start:i]) == d.opts.Null})
			start = i + 1
		}
	}
	d.fields = append(d.fields, textField{start: start, end: len(line), null: string(line[start:]) == d.opts.Null})
}

// splitText cuts a text-format line at the delimiter, undoing backslash
// escapes (\b \f \n \r \t \v, octal \ooo, hex \xhh, any other character
// as itself). A field whose raw text equals the NULL string is NULL.
func (d *textReader) splitText(line []byte) {
	delim := d.opts.Delimiter
	i := 0
	for {
		start, vstart := i, len(d.vals)
		for i < len(line) && line[i] != delim {
			if line[i] != '\\' {
				j := i + 1
				for j < len(line) && line[j] != delim && line[j] != '\\' {
					j++
				}
				d.vals = append(d.vals, line[i:j]...)
				i = j
				continue
			}
			i++
			if i == len(line) {
				break // a lone backslash at the end is dropped
			}
			c := line[i]
			i++
			switch c {
			case '0', '1', '2', '3', '4', '5', '6', '7':
				c -= '0'
				for n := 0; n < 2 && i < len(line) && line[i] >= '0' && line[i] <= '7'; n++ {
					c = c<<3 + line[i] - '0'
					i++
				}
			case 'x':
				if h, ok := unhex(line, i); ok {
					c, i = h, i+1
					if h2, ok := unhex(line, i); ok {
						c, i = c<<4|h2, i+1
					}
				}
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			}
			d.vals = append(d.vals, c)
		}
		d.fields = append(d.fields, textField{start: vstart, end: len(d.vals), null: string(line[start:i]) == d.opts.Null})
		if i >= len(line) {
			return
		}
		i++ // the delimiter
	}
}

// unhex returns the value of the hex digit line[i], if it is one.
func unhex(line []byte, i int) (byte, bool) {
	if i >= len(line) {
		return 0, false
	}
	switch c := line[i]; {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitCSV cuts a CSV line at the delimiter outside quotes. Inside quotes
// the escape character protects a following quote or escape; text after
// a closing quote continues the field. An unquoted field equal to the NULL
// string is NULL.
func (d *textReader) splitCSV(line []byte) error {
	delim, quote, esc := d.opts.Delimiter, d.opts.Quote, d.opts.Escape
	i := 0
	for {
		start, vstart := i, len(d.vals)
		inQuote, sawQuote := false, false
		for i < len(line) {
			c := line[i]
			if !inQuote && c == delim {
				break
			}
			i++
			switch {
			case !inQuote && c == quote:
				inQuote, sawQuote = true, true
			case inQuote && c == esc && i < len(line) && (line[i] == esc || line[i] == quote):
				d.vals = append(d.vals, line[i])
				i++
			case inQuote && c == quote:
				inQuote = false
			default:
				d.vals = append(d.vals, c)
			}
		}
		if inQuote {
			return pgerror.New(pgerror.BadCopyFileFormat, "unterminated CSV quoted field")
		}
		null := !sawQuote && string(line[start:i]) == d.opts.Null
		d.fields = append(d.fields, textField{start: vstart, end: len(d.vals), null: null})
		if i >= len(line) {
			return nil
		}
		i++ // the delimiter
	}
}

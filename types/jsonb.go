package types

import (
	"bytes"
	"sort"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
)

// JSON values are held as text: json verbatim (validated), jsonb in the
// normalized form PostgreSQL's jsonb_out prints. Normalizing makes equal
// jsonb values byte-equal, so equality, hashing and sorting of jsonb need no
// parsing, and -> can return sub-slices of a stored document.

// untranslatableCharacter is PostgreSQL's code for \u0000 in jsonb.
const untranslatableCharacter pgerror.Code = "22P05"

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 6400

// Numeric limits PostgreSQL applies to jsonb numbers.
const (
	maxNumericIntDigits = 131072
	maxNumericScale     = 16383
)

// jsonKind is the type of a parsed JSON value.
type jsonKind uint8

const (
	jsonNull jsonKind = iota + 1
	jsonFalse
	jsonTrue
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is a parsed JSON value. str holds a string's unescaped bytes or
// a number's canonical text; keys and elems hold an object's members (keys
// sorted and unique once normalized) or an array's elements.
type jsonValue struct {
	kind  jsonKind
	str   []byte
	keys  [][]byte
	elems []jsonValue
}

// jsonParser parses JSON text as PostgreSQL's json lexer does. With build
// set it produces a jsonValue tree and applies jsonb's stricter rules
// (paired surrogates, no \u0000, numeric range); without, it only validates.
type jsonParser struct {
	s     []byte
	pos   int
	build bool
	depth int
}

func jsonSyntaxError(detail string, args ...any) error {
	return pgerror.New(pgerror.InvalidJSONText, "invalid input syntax for type json").WithDetail(detail, args...)
}

// ValidateJSON checks that src is valid json text (PostgreSQL's json input
// rules); errors are 22P02.
func ValidateJSON(src []byte) error {
	p := jsonParser{s: src}
	_, err := p.parseDocument()
	return err
}

// NormalizeJSONB parses src as jsonb input and appends its normalized text
// to dst: PostgreSQL's jsonb output, with ", " and ": " separators, object
// keys sorted by length then bytewise, the last of duplicate keys kept,
// numbers in numeric's canonical form (1e2 → 100, -0 → 0, 1.50 stays) and
// strings re-escaped as PostgreSQL does. Errors are 22P02 (22P05 for
// \u0000, 22003 for numbers beyond numeric's range).
func NormalizeJSONB(src []byte, dst []byte) ([]byte, error) {
	p := jsonParser{s: src, build: true}
	v, err := p.parseDocument()
	if err != nil {
		return dst, err
	}
	return appendJSONValue(dst, &v), nil
}

func (p *jsonParser) parseDocument() (jsonValue, error) {
	p.skipWS()
	if p.pos >= len(p.s) {
		return jsonValue{}, jsonSyntaxError("The input string ended unexpectedly.")
	}
	v, err := p.parseValue()
	if err != nil {
		return v, err
	}
	p.skipWS()
	if p.pos < len(p.s) {
		return v, jsonSyntaxError("Expected end of input, but found \"%s\".", p.token())
	}
	return v, nil
}

func (p *jsonParser) skipWS() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// token returns the token starting at pos, for error details.
func (p *jsonParser) token() string {
	i := p.pos
	if i >= len(p.s) {
		return ""
	}
	switch p.s[i] {
	case '{', '}', '[', ']', ',', ':', '"':
		return string(p.s[i : i+1])
	}
	for i < len(p.s) && isJSONWordByte(p.s[i]) {
		i++
	}
	if i == p.pos {
		_, n := utf8.DecodeRune(p.s[i:])
		i += n
	}
	return string(p.s[p.pos:i])
}

func isJSONWordByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '{', '}', '[', ']', ',', ':', '"':
		return false
	}
	return true
}

func (p *jsonParser) parseValue() (jsonValue, error) {
	if p.pos >= len(p.s) {
		return jsonValue{}, jsonSyntaxError("The input string ended unexpectedly.")
	}
	switch c := p.s[p.pos]; c {
	case '{':
		return p.parseObject()
	case '[':
		return p.parseArray()
	case '"':
		s, err := p.parseString()
		return jsonValue{kind: jsonString, str: s}, err
	case '}', ']', ',', ':':
		return jsonValue{}, jsonSyntaxError("Expected JSON value, but found \"%c\".", c)
	}
	start := p.pos
	for p.pos < len(p.s) && isJSONWordByte(p.s[p.pos]) {
		p.pos++
	}
	word := p.s[start:p.pos]
	switch string(word) {
	case "null":
		return jsonValue{kind: jsonNull}, nil
	case "true":
		return jsonValue{kind: jsonTrue}, nil
	case "false":
		return jsonValue{kind: jsonFalse}, nil
	}
	if !isJSONNumber(word) {
		p.pos = start
		return jsonValue{}, jsonSyntaxError("Token \"%s\" is invalid.", p.token())
	}
	if !p.build {
		return jsonValue{kind: jsonNumber}, nil
	}
	num, err := appendCanonicalNumber(nil, word)
	return jsonValue{kind: jsonNumber, str: num}, err
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "json nesting depth exceeds the maximum of %d", maxJSONDepth)
	}
	return nil
}

func (p *jsonParser) parseArray() (jsonValue, error) {
	if err := p.enter(); err != nil {
		return jsonValue{}, err
	}
	defer func() { p.depth-- }()
	v := jsonValue{kind: jsonArray}
	p.pos++ // '['
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipWS()
		e, err := p.parseValue()
		if err != nil {
			return v, err
		}
		if p.build {
			v.elems = append(v.elems, e)
		}
		p.skipWS()
		if p.pos >= len(p.s) {
			return v, jsonSyntaxError("The input string ended unexpectedly.")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return v, jsonSyntaxError("Expected \",\" or \"]\", but found \"%s\".", p.token())
		}
	}
}

func (p *jsonParser) parseObject() (jsonValue, error) {
	if err := p.enter(); err != nil {
		return jsonValue{}, err
	}
	defer func() { p.depth-- }()
	v := jsonValue{kind: jsonObject}
	p.pos++ // '{'
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipWS()
		if p.pos >= len(p.s) {
			return v, jsonSyntaxError("The input string ended unexpectedly.")
		}
		if p.s[p.pos] != '"' {
			return v, jsonSyntaxError("Expected string, but found \"%s\".", p.token())
		}
		k, err := p.parseString()
		if err != nil {
			return v, err
		}
		p.skipWS()
		if p.pos >= len(p.s) {
			return v, jsonSyntaxError("The input string ended unexpectedly.")
		}
		if p.s[p.pos] != ':' {
			return v, jsonSyntaxError("Expected \":\", but found \"%s\".", p.token())
		}
		p.pos++
		p.skipWS()
		e, err := p.parseValue()
		if err != nil {
			return v, err
		}
		if p.build {
			v.keys = append(v.keys, k)
			v.elems = append(v.elems, e)
		}
		p.skipWS()
		if p.pos >= len(p.s) {
			return v, jsonSyntaxError("The input string ended unexpectedly.")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if p.build {
				v.sortKeys()
			}
			return v, nil
		default:
			return v, jsonSyntaxError("Expected \",\" or \"}\", but found \"%s\".", p.token())
		}
	}
}

// sortKeys orders an object's members as jsonb does (length, then bytes)
// and keeps only the last member of each duplicated key.
func (v *jsonValue) sortKeys() {
	idx := make([]int, len(v.keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return jsonKeyLess(v.keys[idx[a]], v.keys[idx[b]]) })
	keys := make([][]byte, 0, len(idx))
	elems := make([]jsonValue, 0, len(idx))
	for i, j := range idx {
		if i+1 < len(idx) && bytes.Equal(v.keys[j], v.keys[idx[i+1]]) {
			continue // a later duplicate wins
		}
		keys = append(keys, v.keys[j])
		elems = append(elems, v.elems[j])
	}
	v.keys, v.elems = keys, elems
}

func jsonKeyLess(a, b []byte) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return bytes.Compare(a, b) < 0
}

// parseString parses the string at pos (which is '"'); with build set it
// returns the unescaped bytes.
func (p *jsonParser) parseString() ([]byte, error) {
	p.pos++
	start := p.pos
	var out []byte
	pendingHigh := rune(-1)
	for {
		if p.pos >= len(p.s) {
			return nil, jsonSyntaxError("The input string ended unexpectedly.")
		}
		c := p.s[p.pos]
		if c == '"' {
			if pendingHigh >= 0 {
				return nil, jsonSyntaxError("Unicode low surrogate must follow a high surrogate.")
			}
			if p.build && out == nil {
				out = p.s[start:p.pos:p.pos]
			}
			p.pos++
			return out, nil
		}
		if c < 0x20 {
			return nil, jsonSyntaxError("Character with value 0x%02x must be escaped.", c)
		}
		if c != '\\' {
			if pendingHigh >= 0 {
				return nil, jsonSyntaxError("Unicode low surrogate must follow a high surrogate.")
			}
			if p.build && out != nil {
				out = append(out, c)
			}
			p.pos++
			continue
		}
		if p.build && out == nil {
			out = append(make([]byte, 0, p.pos-start+16), p.s[start:p.pos]...)
		}
		if p.pos+1 >= len(p.s) {
			return nil, jsonSyntaxError("The input string ended unexpectedly.")
		}
		e := p.s[p.pos+1]
		if e != 'u' && pendingHigh >= 0 {
			return nil, jsonSyntaxError("Unicode low surrogate must follow a high surrogate.")
		}
		var r byte
		switch e {
		case '"', '\\', '/':
			r = e
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			if p.pos+6 > len(p.s) {
				return nil, jsonSyntaxError("\"\\u\" must be followed by four hexadecimal digits.")
			}
			var cp rune
			for _, h := range p.s[p.pos+2 : p.pos+6] {
				d, ok := unhex(h)
				if !ok {
					return nil, jsonSyntaxError("\"\\u\" must be followed by four hexadecimal digits.")
				}
				cp = cp<<4 | rune(d)
			}
			p.pos += 6
			if !p.build {
				continue
			}
			switch {
			case cp >= 0xd800 && cp <= 0xdbff:
				if pendingHigh >= 0 {
					return nil, jsonSyntaxError("Unicode high surrogate must not follow a high surrogate.")
				}
				pendingHigh = cp
				continue
			case cp >= 0xdc00 && cp <= 0xdfff:
				if pendingHigh < 0 {
					return nil, jsonSyntaxError("Unicode low surrogate must follow a high surrogate.")
				}
				cp = utf16.DecodeRune(pendingHigh, cp)
				pendingHigh = -1
			case pendingHigh >= 0:
				return nil, jsonSyntaxError("Unicode low surrogate must follow a high surrogate.")
			case cp == 0:
				return nil, pgerror.New(untranslatableCharacter, "unsupported Unicode escape sequence").
					WithDetail("\\u0000 cannot be converted to text.")
			}
			out = utf8.AppendRune(out, cp)
			continue
		default:
			return nil, jsonSyntaxError("Escape sequence \"\\%s\" is invalid.", string(e))
		}
		if p.build {
			out = append(out, r)
		}
		p.pos += 2
	}
}

// isJSONNumber reports whether w matches -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func isJSONNumber(w []byte) bool {
	i := 0
	if i < len(w) && w[i] == '-' {
		i++
	}
	switch {
	case i < len(w) && w[i] == '0':
		i++
	case i < len(w) && w[i] >= '1' && w[i] <= '9':
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(w) && w[i] == '.' {
		i++
		start := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '+' || w[i] == '-') {
			i++
		}
		start := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(w)
}

// appendCanonicalNumber appends the valid JSON number w as PostgreSQL's
// numeric prints it: the exponent applied, the display scale kept as
// max(0, fraction digits - exponent), no sign on zero.
func appendCanonicalNumber(dst []byte, w []byte) ([]byte, error) {
	neg := false
	if w[0] == '-' {
		neg = true
		w = w[1:]
	}
	i := 0
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	intPart := w[:i]
	var frac []byte
	if i < len(w) && w[i] == '.' {
		j := i + 1
		for j < len(w) && w[j] >= '0' && w[j] <= '9' {
			j++
		}
		frac = w[i+1 : j]
		i = j
	}
	exp := 0
	if i < len(w) {
		i++ // 'e' or 'E'
		eneg := false
		if w[i] == '+' || w[i] == '-' {
			eneg = w[i] == '-'
			i++
		}
		for ; i < len(w); i++ {
			if exp > 10*maxNumericIntDigits {
				return dst, pgerror.New(pgerror.NumericValueOutOfRange, "value overflows numeric format")
			}
			exp = exp*10 + int(w[i]-'0')
		}
		if eneg {
			exp = -exp
		}
	}
	scale := len(frac) - exp
	if scale < 0 {
		scale = 0
	}
	// The digits are intPart+frac with the decimal point after point digits.
	point := len(intPart) + exp
	if point > maxNumericIntDigits || scale > maxNumericScale {
		return dst, pgerror.New(pgerror.NumericValueOutOfRange, "value overflows numeric format")
	}
	digit := func(k int) byte { // k-th digit of intPart+frac, zero outside
		switch {
		case k < 0 || k >= len(intPart)+len(frac):
			return '0'
		case k < len(intPart):
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	start := len(dst)
	if neg {
		dst = append(dst, '-')
	}
	digitsStart := len(dst)
	leading := true
	for k := 0; k < point; k++ {
		d := digit(k)
		if leading && d == '0' {
			continue
		}
		leading = false
		dst = append(dst, d)
	}
	if leading {
		dst = append(dst, '0')
	}
	if scale > 0 {
		dst = append(dst, '.')
		for k := point; k < point+scale; k++ {
			dst = append(dst, digit(k))
		}
	}
	if neg && isZeroNumber(dst[digitsStart:]) {
		dst = append(dst[:start], dst[digitsStart:]...)
	}
	return dst, nil
}

func isZeroNumber(b []byte) bool {
	for _, c := range b {
		if c >= '1' && c <= '9' {
			return false
		}
	}
	return true
}

// appendJSONValue appends v's normalized jsonb text.
func appendJSONValue(dst []byte, v *jsonValue) []byte {
	switch v.kind {
	case jsonNull:
		return append(dst, "null"...)
	case jsonTrue:
		return append(dst, "true"...)
	case jsonFalse:
		return append(dst, "false"...)
	case jsonNumber:
		return append(dst, v.str...)
	case jsonString:
		return appendJSONString(dst, v.str)
	case jsonArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJSONValue(dst, &v.elems[i])
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i := range v.elems {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendJSONString(dst, v.keys[i])
		dst = append(dst, ": "...)
		dst = appendJSONValue(dst, &v.elems[i])
	}
	return append(dst, '}')
}

// appendJSONString appends s quoted and escaped as PostgreSQL's escape_json.
func appendJSONString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// The accessors below work on stored documents (valid json or normalized
// jsonb text). They scan without building a tree and return sub-slices of
// the document; on malformed bytes they report "not found" instead of
// failing, so corrupt input never panics.

func jsonSkipWS(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// jsonSkipString returns the index after the string starting at s[i] == '"'.
func jsonSkipString(s []byte, i int) (int, bool) {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return len(s), false
}

// jsonSkipValue returns the index after the value starting at s[i].
func jsonSkipValue(s []byte, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch s[i] {
	case '"':
		return jsonSkipString(s, i)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				j, ok := jsonSkipString(s, i)
				if !ok {
					return j, false
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return i, false
	}
	j := i
	for j < len(s) && isJSONWordByte(s[j]) {
		j++
	}
	return j, j > i
}

// jsonKeyEqual reports whether the quoted JSON string q equals key once unescaped.
func jsonKeyEqual(q []byte, key string) bool {
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body) == key
	}
	p := jsonParser{s: q, build: true}
	s, err := p.parseString()
	return err == nil && string(s) == key
}

// JSONField returns the value of member key of the object doc (the ->
// operator with a text key), as a sub-slice of doc: normalized jsonb text
// when doc is jsonb, the verbatim text when doc is json. Of duplicate keys
// in json the last wins, as in PostgreSQL. ok is false when doc is not an
// object or has no such member.
func JSONField(doc []byte, key string) (val []byte, ok bool) {
	i := jsonSkipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	i = jsonSkipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, false
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return nil, false
		}
		ke, kok := jsonSkipString(doc, i)
		if !kok {
			return nil, false
		}
		match := jsonKeyEqual(doc[i:ke], key)
		i = jsonSkipWS(doc, ke)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		vs := jsonSkipWS(doc, i+1)
		ve, vok := jsonSkipValue(doc, vs)
		if !vok {
			return nil, false
		}
		if match {
			val, ok = doc[vs:ve], true
		}
		i = jsonSkipWS(doc, ve)
		if i >= len(doc) || doc[i] != ',' {
			break
		}
		i = jsonSkipWS(doc, i+1)
	}
	return val, ok
}

// JSONIndex returns element idx (0-based; negative counts from the end) of
// the array doc (the -> operator with an integer), as a sub-slice of doc.
// ok is false when doc is not an array or idx is out of range.
func JSONIndex(doc []byte, idx int) (val []byte, ok bool) {
	if idx < 0 {
		n := jsonArrayLen(doc)
		if n < 0 || -idx > n {
			return nil, false
		}
		idx += n
	}
	i := jsonSkipWS(doc, 0)
	if i >= len(doc) || doc[i] != '[' {
		return nil, false
	}
	i = jsonSkipWS(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return nil, false
	}
	for k := 0; i < len(doc); k++ {
		e, eok := jsonSkipValue(doc, i)
		if !eok {
			return nil, false
		}
		if k == idx {
			return doc[i:e], true
		}
		i = jsonSkipWS(doc, e)
		if i >= len(doc) || doc[i] != ',' {
			break
		}
		i = jsonSkipWS(doc, i+1)
	}
	return nil, false
}

// jsonArrayLen returns the element count of the array doc, or -1.
func jsonArrayLen(doc []byte) int {
	i := jsonSkipWS(doc, 0)
	if i >= len(doc) || doc[i] != '[' {
		return -1
	}
	i = jsonSkipWS(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return 0
	}
	n := 0
	for i < len(doc) {
		e, ok := jsonSkipValue(doc, i)
		if !ok {
			return -1
		}
		n++
		i = jsonSkipWS(doc, e)
		if i >= len(doc) || doc[i] != ',' {
			break
		}
		i = jsonSkipWS(doc, i+1)
	}
	return n
}

// JSONText converts a JSON value to text as ->> does: a string is unquoted
// and unescaped, null becomes SQL NULL, anything else is its text as is.
// The result may alias val.
func JSONText(val []byte) (s []byte, isNull bool) {
	val = bytes.Trim(val, " \t\n\r")
	switch {
	case string(val) == "null":
		return nil, true
	case len(val) >= 2 && val[0] == '"':
		if bytes.IndexByte(val, '\\') < 0 {
			return val[1 : len(val)-1], false
		}
		p := jsonParser{s: val, build: true}
		if u, err := p.parseString(); err == nil {
			return u, false
		}
	}
	return val, false
}

// JSONContains reports whether jsonb a contains jsonb b (the @> operator):
// an object contains another whose members it contains recursively, an
// array contains another whose every element matches some element of its
// own regardless of order, a top-level array contains a scalar element,
// and scalars contain equal scalars.
func JSONContains(a, b []byte) (bool, error) {
	pa := jsonParser{s: a, build: true}
	va, err := pa.parseDocument()
	if err != nil {
		return false, err
	}
	pb := jsonParser{s: b, build: true}
	vb, err := pb.parseDocument()
	if err != nil {
		return false, err
	}
	switch {
	case va.kind == jsonArray && vb.kind != jsonArray && vb.kind != jsonObject:
		// A raw scalar behaves as a one-element array.
		vb = jsonValue{kind: jsonArray, elems: []jsonValue{vb}}
	case va.kind != jsonArray && va.kind != jsonObject:
		return jsonScalarEqual(&va, &vb), nil
	}
	return jsonDeepContains(&va, &vb), nil
}

func jsonDeepContains(a, b *jsonValue) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case jsonObject:
		for i, k := range b.keys {
			j := sort.Search(len(a.keys), func(j int) bool { return !jsonKeyLess(a.keys[j], k) })
			if j == len(a.keys) || !bytes.Equal(a.keys[j], k) {
				return false
			}
			av, bv := &a.elems[j], &b.elems[i]
			if bv.kind == jsonObject || bv.kind == jsonArray {
				if !jsonDeepContains(av, bv) {
					return false
				}
			} else if !jsonScalarEqual(av, bv) {
				return false
			}
		}
		return true
	case jsonArray:
	next:
		for i := range b.elems {
			bv := &b.elems[i]
			for j := range a.elems {
				av := &a.elems[j]
				if bv.kind == jsonObject || bv.kind == jsonArray {
					if jsonDeepContains(av, bv) {
						continue next
					}
				} else if jsonScalarEqual(av, bv) {
					continue next
				}
			}
			return false
		}
		return true
	}
	return jsonScalarEqual(a, b)
}

func jsonScalarEqual(a, b *jsonValue) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case jsonString:
		return bytes.Equal(a.str, b.str)
	case jsonNumber:
		return bytes.Equal(trimFractionZeros(a.str), trimFractionZeros(b.str))
	}
	return a.kind != jsonArray && a.kind != jsonObject
}

// trimFractionZeros drops trailing fractional zeros of a canonical number,
// so that numerically equal numbers compare byte-equal.
func trimFractionZeros(n []byte) []byte {
	if bytes.IndexByte(n, '.') < 0 {
		return n
	}
	n = bytes.TrimRight(n, "0")
	return bytes.TrimSuffix(n, []byte("."))
}

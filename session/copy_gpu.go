package session

import (
	"slices"
	"strings"
)

// COPY ... TO GPU [WITH (...)] is the tensor stream (docs/tensor-stream.md)
// under a target the PostgreSQL grammar lacks: before parsing, the trailing
// TO GPU of a COPY statement (or of EXPLAIN COPY) becomes TO STDOUT and
// FORMAT tensor joins its options. The rewrite works on tokens, so string literals, quoted
// identifiers, comments and parenthesized queries are never touched.

// gpuToken is a token of the query text: a word, a string or quoted
// identifier, or one of ( ) , ;.
type gpuToken struct {
	start, end int
	// kind is 'w' for a word, 's' for a string or quoted identifier, or
	// the punctuation byte.
	kind  byte
	depth int
}

// rewriteCopyToGPU returns query with every COPY ... TO GPU rewritten; the
// query itself when it has none.
func rewriteCopyToGPU(query string) string {
	if !containsFold(query, "gpu") {
		return query
	}
	toks := gpuTokens(query)
	type edit struct {
		at, del int
		ins     string
	}
	var edits []edit
	word := func(t gpuToken, w string) bool {
		return t.kind == 'w' && strings.EqualFold(query[t.start:t.end], w)
	}
	for lo := 0; lo < len(toks); {
		hi := lo
		for hi < len(toks) && !(toks[hi].kind == ';' && toks[hi].depth == 0) {
			hi++
		}
		st := toks[lo:hi]
		lo = hi + 1
		if len(st) > 0 && word(st[0], "explain") {
			// EXPLAIN COPY ... TO GPU shows the stream's plan: the
			// COPY after EXPLAIN and its options is rewritten.
			st = st[1:]
			if len(st) > 0 && st[0].kind == '(' {
				k := slices.IndexFunc(st, func(t gpuToken) bool { return t.kind == ')' && t.depth == st[0].depth })
				st = st[k+1:]
			}
			for len(st) > 0 && (word(st[0], "analyze") || word(st[0], "analyse") || word(st[0], "verbose")) {
				st = st[1:]
			}
		}
		if len(st) < 3 || !word(st[0], "copy") {
			continue
		}
		k := slices.IndexFunc(st, func(t gpuToken) bool { return t.depth == 0 && word(t, "to") })
		if k < 0 || k+1 >= len(st) || st[k+1].depth != 0 || !word(st[k+1], "gpu") {
			continue
		}
		gpu := st[k+1]
		edits = append(edits, edit{gpu.start, gpu.end - gpu.start, "STDOUT"})
		rest := st[k+2:]
		if len(rest) > 0 && word(rest[0], "with") {
			rest = rest[1:]
		}
		if len(rest) == 0 || rest[0].kind != '(' {
			edits = append(edits, edit{gpu.end, 0, " WITH (FORMAT tensor)"})
			continue
		}
		open := rest[0]
		list := rest[1:]
		if len(list) > 0 && list[0].kind == ')' {
			edits = append(edits, edit{open.end, 0, "FORMAT tensor"})
			continue
		}
		// A FORMAT tensor already there stays alone; any other FORMAT
		// meets a second one and fails as conflicting options.
		hasTensor := false
		for i := 0; i+1 < len(list) && list[i].depth > open.depth; i++ {
			optStart := i == 0 || list[i-1].kind == ','
			if optStart && word(list[i], "format") {
				v := strings.Trim(query[list[i+1].start:list[i+1].end], `'"`)
				hasTensor = strings.EqualFold(v, "tensor")
			}
		}
		if !hasTensor {
			edits = append(edits, edit{open.end, 0, "FORMAT tensor, "})
		}
	}
	if len(edits) == 0 {
		return query
	}
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(query[last:e.at])
		b.WriteString(e.ins)
		last = e.at + e.del
	}
	b.WriteString(query[last:])
	return b.String()
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

// gpuTokens splits q into tokens as PostgreSQL's lexer would for what the
// rewrite needs: words, strings ('...', E'...', $tag$...$tag$), quoted
// identifiers, parentheses, commas and semicolons; comments and other
// characters are skipped. depth counts the parentheses around a token (a
// parenthesis counts as outside itself).
func gpuTokens(q string) []gpuToken {
	var toks []gpuToken
	depth := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			nest := 0
			for i < len(q) {
				if strings.HasPrefix(q[i:], "/*") {
					nest++
					i += 2
				} else if strings.HasPrefix(q[i:], "*/") {
					nest--
					i += 2
					if nest == 0 {
						break
					}
				} else {
					i++
				}
			}
		case c == '\'' || c == '"':
			end := quotedEnd(q, i, false)
			toks = append(toks, gpuToken{i, end, 's', depth})
			i = end
		case c == '$' && i+1 < len(q) && !isDigit(q[i+1]):
			j := i + 1
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			if j < len(q) && q[j] == '$' {
				tag := q[i : j+1]
				end := strings.Index(q[j+1:], tag)
				if end < 0 {
					end = len(q)
				} else {
					end += j + 1 + len(tag)
				}
				toks = append(toks, gpuToken{i, end, 's', depth})
				i = end
				continue
			}
			i++
		case isWordByte(c) || c >= 0x80:
			j := i
			for j < len(q) && (isWordByte(q[j]) || q[j] == '$' || q[j] >= 0x80) {
				j++
			}
			if j < len(q) && q[j] == '\'' && j-i == 1 && (c == 'e' || c == 'E') {
				end := quotedEnd(q, j, true)
				toks = append(toks, gpuToken{i, end, 's', depth})
				i = end
				continue
			}
			toks = append(toks, gpuToken{i, j, 'w', depth})
			i = j
		case c == '(':
			toks = append(toks, gpuToken{i, i + 1, c, depth})
			depth++
			i++
		case c == ')':
			if depth > 0 {
				depth--
			}
			toks = append(toks, gpuToken{i, i + 1, c, depth})
			i++
		case c == ',' || c == ';':
			toks = append(toks, gpuToken{i, i + 1, c, depth})
			i++
		default:
			i++
		}
	}
	return toks
}

// quotedEnd returns the end of the quoted token starting at q[i] (a quote
// doubled inside stays inside; with backslash, a backslash escapes).
func quotedEnd(q string, i int, backslash bool) int {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		switch {
		case backslash && q[j] == '\\':
			j++
		case q[j] == quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

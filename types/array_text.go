package types

import "strings"

// ArrayElems splits the text form of a one-dimensional array ({a,b,"c d"})
// into its elements, quotes and escapes removed; an unquoted NULL comes
// back as "NULL". Text without braces is one element.
func ArrayElems(s string) []string {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return []string{s}
	}
	s = s[1 : len(s)-1]
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted, any = !quoted, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == ',' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
			any = true
		}
	}
	if any || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

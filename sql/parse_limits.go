package sql

import (
	"math"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
)

// The PostgreSQL grammar and the code that turns its tree into protobuf
// recurse on the C stack once per level of the tree, and the C parser has no
// working stack check of its own: PostgreSQL's check_stack_depth needs a
// stack base that a backend sets when it starts, and the raw grammar never
// calls it anyway. A tree deep enough overflows the C stack of the thread
// that runs the parse and kills the process. So Parse first scans the text
// (prescan) and estimates, from its nesting and the length of its operator
// chains, the C stack the parse can take; past max_stack_depth it refuses
// the query with 54001 as PostgreSQL's check does, before the parser runs.
// The protobuf decoder bounds the depth of the tree handed to Go (10,000
// messages), which bounds the recursion of conversion, binding, planning and
// execution that follow.

// Limits bound what Parse hands to the parser.
type Limits struct {
	// MaxStackDepth is max_stack_depth in bytes: the C stack a parse may
	// take. Zero means the default (DefaultStackDepthKB).
	MaxStackDepth int64
}

const (
	// MaxQueryBytes is the longest query string Parse accepts (54000
	// beyond): parsing costs several times the text in memory, a long
	// string literal about six times, and the protocol alone would allow
	// 1 GB.
	MaxQueryBytes = 64 << 20
	// MaxQueryTokens is the most lexical tokens Parse accepts (54000
	// beyond): each costs up to about 500 bytes in the parse tree, C and Go
	// copies together, so a flat list (an IN list of a million values)
	// stays within a few hundred MB.
	MaxQueryTokens = 1 << 21
	// MinStackDepthKB is the smallest max_stack_depth, as in PostgreSQL.
	MinStackDepthKB = 100
	// defaultStackDepthKB is PostgreSQL's default max_stack_depth.
	defaultStackDepthKB = 2048
)

// C stack a parse takes per level of each construct, in bytes: measured on
// x86-64 (350-370 bytes per operator, function call, ARRAY[ or ROW( level,
// 720 per CASE, 1070 per scalar subquery) and rounded up. Deparsing a tree
// (a column DEFAULT is kept as deparsed text) takes up to six times its
// parse (2,000 bytes per operator, 6,000 per subquery).
const (
	costOperator     = 400
	costGroup        = 400
	costSubquery     = 800 // beyond its parentheses
	costCase         = 800
	costLiteralLevel = 400 // a level of an array or JSON literal's nesting
	deparseFactor    = 6
)

// MaxStackDepthKB is the largest max_stack_depth this process allows: the
// smallest C stack a parse can run on less PostgreSQL's 512 kB of slop, as
// PostgreSQL bounds it by the stack's rlimit.
func MaxStackDepthKB() int64 {
	kb := (cStack() - stackSlop) / 1024
	if kb < MinStackDepthKB {
		kb = MinStackDepthKB
	}
	return kb
}

// DefaultStackDepthKB is max_stack_depth's default: PostgreSQL's 2MB, or
// less where the stack is smaller.
func DefaultStackDepthKB() int64 {
	return min(defaultStackDepthKB, MaxStackDepthKB())
}

// DefaultLimits are the limits of a session that changed no setting.
func DefaultLimits() Limits { return Limits{MaxStackDepth: DefaultStackDepthKB() * 1024} }

// maxStackDepth is MaxStackDepth, or its default, within what the stack
// allows.
func (l Limits) maxStackDepth() int64 {
	if l.MaxStackDepth <= 0 {
		return DefaultStackDepthKB() * 1024
	}
	return min(l.MaxStackDepth, MaxStackDepthKB()*1024)
}

// StackDepthError is PostgreSQL's 54001 for a statement nested too deeply.
func (l Limits) StackDepthError() *pgerror.Error {
	return pgerror.New(pgerror.StatementTooComplex, "stack depth limit exceeded").WithHint(
		"Increase the configuration parameter \"max_stack_depth\" (currently %dkB), after ensuring the platform's stack depth limit is adequate.",
		l.maxStackDepth()/1024)
}

// CheckSize refuses a query string longer than MaxQueryBytes with 54000. It
// costs nothing, so callers that work on the text before Parse (a rewrite)
// call it first.
func CheckSize(query string) error {
	if len(query) > MaxQueryBytes {
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "query string is too long (%d bytes, at most %d)", len(query), MaxQueryBytes)
	}
	return nil
}

// Check refuses, before it reaches the parser, a query string that is too
// long (54000), has too many tokens (54000), or whose parse could take more
// than max_stack_depth of C stack (54001).
func (l Limits) Check(query string) error {
	if err := CheckSize(query); err != nil {
		return err
	}
	limit := l.maxStackDepth()
	cost, tokens, expanded := prescan(query, limit)
	if tokens > MaxQueryTokens {
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "query string has too many tokens (more than %d)", MaxQueryTokens)
	}
	if cost > limit {
		return l.StackDepthError()
	}
	if expanded > MaxQueryTokens {
		return pgerror.Newf(pgerror.StatementTooComplex, "statement is too complex: BETWEEN repeats its first operand, which makes its expressions more than %d tokens long", MaxQueryTokens)
	}
	return nil
}

// checkDeparse refuses with 54001 a statement whose expressions are too
// deep to deparse within the default max_stack_depth: deparsing takes up to
// deparseFactor times the stack of parsing.
func checkDeparse(stmt string) error {
	lim := DefaultLimits()
	if cost, _, _ := prescan(stmt, lim.maxStackDepth()/deparseFactor); cost*deparseFactor > lim.maxStackDepth() {
		return lim.StackDepthError()
	}
	return nil
}

// scanFrame is one open group of the prescan: parentheses, brackets or a
// CASE ... END.
type scanFrame struct {
	weight int64 // stack the group itself costs
	ops    int64 // operators in the current segment
	child  int64 // costliest group closed in the current segment
	best   int64 // costliest segment closed so far
	closer byte  // ')', ']', or 'E' for END
	first  bool  // no token seen inside yet
	// between is set from a BETWEEN to the AND that belongs to it.
	between bool
	// boolean is set once AND or OR split the group: PostgreSQL keeps a
	// chain of either as one node with a list, two levels at most.
	boolean bool
	// seg and total count the tokens of the current segment and of the
	// closed ones as the binder expands them: x BETWEEN a AND b is
	// x >= a AND x <= b, so each BETWEEN doubles what comes before it in
	// its segment (an upper bound on its first operand).
	seg, total int64
}

// endSegment closes the current segment: a comma, AND, OR, WHEN, THEN or
// ELSE separates operands that do not nest in one another.
func (f *scanFrame) endSegment() {
	if d := f.ops*costOperator + f.child; d > f.best {
		f.best = d
	}
	f.ops, f.child = 0, 0
	f.total = satAdd(f.total, f.seg)
	f.seg = 0
}

// satAdd adds without overflowing.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// cost is the stack the closed group costs.
func (f *scanFrame) cost() int64 {
	f.endSegment()
	c := f.weight + f.best
	if f.boolean {
		c += 2 * costOperator
	}
	return c
}

// prescan estimates the C stack the parse of query takes (an upper bound:
// every operator counts as a level of the tree), counts its tokens, and
// estimates the tokens of its expressions as bound (expanded). It stops
// early once the estimate passes limit or the tokens MaxQueryTokens, so
// that it holds at most limit/costGroup frames.
func prescan(query string, limit int64) (cost, tokens, expanded int64) {
	stack := []scanFrame{{}}
	open := int64(0)    // sum of the weights of the open groups
	var opened [256]int // open groups by closer
	top := func() *scanFrame { return &stack[len(stack)-1] }
	push := func(weight int64, closer byte) {
		stack = append(stack, scanFrame{weight: weight, closer: closer, first: true})
		open += weight
		opened[closer]++
	}
	pop := func() {
		f := top()
		opened[f.closer]--
		c := f.cost()
		open -= f.weight
		total := f.total
		stack = stack[:len(stack)-1]
		p := top()
		if c > p.child {
			p.child = c
		}
		p.seg = satAdd(p.seg, total)
	}
	// over reports whether the estimate already passes the limit.
	over := func() bool {
		f := top()
		return open+f.ops*costOperator > limit || open+f.child > limit
	}
	q := query
	for i := 0; i < len(q); {
		c := q[i]
		if isSpace(c) {
			i++
			continue
		}
		// Comments are not tokens.
		if c == '-' && i+1 < len(q) && q[i+1] == '-' {
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			continue
		}
		if c == '/' && i+1 < len(q) && q[i+1] == '*' {
			i = skipBlockComment(q, i)
			continue
		}
		tokens++
		if tokens > MaxQueryTokens {
			return 0, tokens, tokens
		}
		f := top()
		f.seg++
		first := f.first
		f.first = false
		switch {
		case c == '\'':
			j, nest := scanString(q, i+1, false)
			if d := nest * costLiteralLevel; d > f.child {
				f.child = d
			}
			i = j
		case c == '"':
			i = scanQuotedIdent(q, i+1)
		case c == '$' && i+1 < len(q) && isDigit(q[i+1]):
			i += 2
			for i < len(q) && isDigit(q[i]) {
				i++
			}
		case c == '$':
			i = scanDollar(q, i)
		case isIdentStart(c):
			j := i + 1
			for j < len(q) && isIdentCont(q[j]) {
				j++
			}
			word := q[i:j]
			// E'...', B'...', X'...', N'...': a string with a prefix.
			if j-i == 1 && j < len(q) && q[j] == '\'' {
				switch c | 0x20 {
				case 'e':
					j, nest := scanString(q, j+1, true)
					if d := nest * costLiteralLevel; d > f.child {
						f.child = d
					}
					i = j
					continue
				case 'b', 'x', 'n':
					i, _ = scanString(q, j+1, false)
					continue
				}
			}
			i = j
			switch keyword(word) {
			case kwAnd:
				if f.between {
					f.between = false
					f.ops++
				} else {
					f.endSegment()
					f.boolean = true
				}
			case kwOr:
				f.endSegment()
				f.boolean = true
			case kwBetween:
				f.between = true
				f.ops++
				f.seg = satAdd(f.seg, f.seg)
			case kwOperator:
				f.ops++
			case kwSeparator:
				f.endSegment()
			case kwCase:
				push(costCase, 'E')
			case kwEnd:
				if f.closer == 'E' {
					pop()
				}
			case kwQuery:
				if first && f.closer == ')' {
					f.weight += costSubquery
					open += costSubquery
				}
			}
		case isDigit(c) || c == '.' && i+1 < len(q) && isDigit(q[i+1]):
			i++
			for i < len(q) && (isIdentCont(q[i]) || q[i] == '.') {
				i++
			}
		case c == '(':
			push(costGroup, ')')
			i++
		case c == '[':
			push(costGroup, ']')
			i++
		case c == ')' || c == ']':
			// Close up to the matching group; an unmatched one is the
			// parser's syntax error to report.
			if opened[c] > 0 {
				for top().closer != c {
					pop()
				}
				pop()
			}
			i++
		case c == ',' || c == ';':
			f.endSegment()
			i++
		case c == ':' && i+1 < len(q) && q[i+1] == ':':
			f.ops++
			i += 2
		case isOpChar(c):
			j := i
			for j < len(q) && isOpChar(q[j]) {
				if j+1 < len(q) && (q[j] == '-' && q[j+1] == '-' || q[j] == '/' && q[j+1] == '*') {
					break
				}
				j++
			}
			if j == i {
				// A comment follows at once ("--", "/*"): the loop above
				// handles it.
				j = i + 1
			}
			f.ops += operatorCount(q[i:j])
			i = j
		default:
			i++
		}
		if over() {
			return open + max(top().ops*costOperator, top().child) + 1, tokens, 0
		}
	}
	for len(stack) > 1 {
		pop()
	}
	cost = stack[0].cost()
	return cost, tokens, stack[0].total
}

// operatorCount is how many operators the lexer makes of a run of operator
// characters: PostgreSQL splits a trailing + or - off an operator made only
// of + - * / < > =, so "+-+-" is four operators (a binary and three prefix
// ones) while "->>" is one.
func operatorCount(run string) int64 {
	if strings.ContainsAny(run, "~!@#%^&|`?") {
		return 1
	}
	// The longest operator is trimmed of its trailing + and -, each of
	// which is then an operator of its own.
	k := len(run)
	for k > 0 && (run[k-1] == '+' || run[k-1] == '-') {
		k--
	}
	if k == 0 {
		return int64(len(run))
	}
	return 1 + int64(len(run)-k)
}

// scanString skips a string literal whose opening quote is before i and
// returns the index after it with the nesting of the brackets in it, when it
// reads as an array or JSON literal (starts with '{' or '[').
func scanString(q string, i int, backslash bool) (int, int64) {
	start := i
	for i < len(q) {
		switch q[i] {
		case '\\':
			if backslash {
				i += 2
				continue
			}
		case '\'':
			if i+1 < len(q) && q[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1, literalNesting(q[start:i])
		}
		i++
	}
	return len(q), literalNesting(q[start:])
}

// literalNesting is the deepest nesting of { [ in an array or JSON literal.
func literalNesting(s string) int64 {
	s = strings.TrimLeft(s, " \t\n\r")
	if s == "" || s[0] != '{' && s[0] != '[' {
		return 0
	}
	depth, deepest := int64(0), int64(0)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

func scanQuotedIdent(q string, i int) int {
	for i < len(q) {
		if q[i] == '"' {
			if i+1 < len(q) && q[i+1] == '"' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(q)
}

// scanDollar skips a dollar-quoted string ($$...$$, $tag$...$tag$) at i, or
// a lone $.
func scanDollar(q string, i int) int {
	j := i + 1
	if j < len(q) && isIdentStart(q[j]) {
		j++
		for j < len(q) && isIdentCont(q[j]) && q[j] != '$' {
			j++
		}
	}
	if j >= len(q) || q[j] != '$' {
		return i + 1
	}
	tag := q[i : j+1]
	end := strings.Index(q[j+1:], tag)
	if end < 0 {
		return len(q)
	}
	return j + 1 + end + len(tag)
}

// skipBlockComment skips a /* */ comment at i; they nest, as in PostgreSQL.
func skipBlockComment(q string, i int) int {
	depth := 0
	for i < len(q) {
		switch {
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			depth++
			i += 2
		case q[i] == '*' && i+1 < len(q) && q[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(q)
}

const (
	kwNone = iota
	kwAnd
	kwOr
	kwBetween
	kwOperator  // a keyword that makes a node over its operands (NOT, IS, IN, ...)
	kwSeparator // WHEN, THEN, ELSE
	kwCase
	kwEnd
	kwQuery // SELECT, VALUES, WITH, TABLE: a subquery when first in parentheses
)

var keywords = map[string]int{
	"and": kwAnd, "or": kwOr, "between": kwBetween,
	"not": kwOperator, "is": kwOperator, "in": kwOperator, "like": kwOperator,
	"ilike": kwOperator, "similar": kwOperator, "isnull": kwOperator,
	"notnull": kwOperator, "overlaps": kwOperator, "collate": kwOperator,
	"at": kwOperator, "escape": kwOperator,
	"when": kwSeparator, "then": kwSeparator, "else": kwSeparator,
	"case": kwCase, "end": kwEnd,
	"select": kwQuery, "values": kwQuery, "with": kwQuery, "table": kwQuery,
}

// keyword classifies word for the prescan, in any case, without allocating.
func keyword(word string) int {
	if len(word) < 2 || len(word) > 8 {
		return kwNone
	}
	var buf [8]byte
	for i := 0; i < len(word); i++ {
		c := word[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return keywords[string(buf[:len(word)])]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

func isOpChar(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '%', '^', '&', '|', '`', '?':
		return true
	}
	return false
}

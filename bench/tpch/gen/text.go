package gen

import "sync"

// poolSize is the length of the text pool. The specification's pool is
// 300 MB; a smaller one gives the same distribution of words and phrases
// to every comment, and is built in a fraction of a second.
const poolSize = 16 << 20

var (
	poolOnce sync.Once
	pool     []byte
)

// textPool returns the text pool of clause 4.2.2.14: sentences of the
// grammar in dists.go, separated by single spaces, built once from a fixed
// seed so that it is the same at every scale factor.
func textPool() []byte {
	poolOnce.Do(func() {
		var s stream
		s.seed(tablePool, 0, 0)
		b := make([]byte, 0, poolSize+256)
		for len(b) < poolSize {
			b = appendSentence(b, &s)
			b = append(b, ' ')
		}
		pool = b[:poolSize]
	})
	return pool
}

// appendSentence appends one sentence: its words separated by spaces,
// the terminator abutting the last word.
func appendSentence(b []byte, s *stream) []byte {
	syntax := sentences.pick(s)
	for i := 0; i < len(syntax); i++ {
		switch syntax[i] {
		case 'N':
			b = appendNounPhrase(b, s)
		case 'V':
			b = appendVerbPhrase(b, s)
		case 'P':
			b = append(b, prepositions.pick(s)...)
			b = append(b, " the "...)
			b = appendNounPhrase(b, s)
		case 'T':
			b = b[:len(b)-1] // the space after the last word
			b = append(b, terminators.pick(s)...)
			return b
		}
		b = append(b, ' ')
		i++ // the space between symbols
	}
	return b
}

// appendNounPhrase appends a noun phrase with no space after it.
func appendNounPhrase(b []byte, s *stream) []byte {
	syntax := nounPhrases.pick(s)
	for i := 0; i < len(syntax); i++ {
		switch syntax[i] {
		case 'N':
			b = append(b, nouns.pick(s)...)
		case 'J':
			b = append(b, adjectives.pick(s)...)
		case 'D':
			b = append(b, adverbs.pick(s)...)
		case ',':
			b = append(b, ',')
		case ' ':
			b = append(b, ' ')
		}
	}
	return b
}

// appendVerbPhrase appends a verb phrase with no space after it.
func appendVerbPhrase(b []byte, s *stream) []byte {
	syntax := verbPhrases.pick(s)
	for i := 0; i < len(syntax); i++ {
		switch syntax[i] {
		case 'V':
			b = append(b, verbs.pick(s)...)
		case 'X':
			b = append(b, auxiliaries.pick(s)...)
		case 'D':
			b = append(b, adverbs.pick(s)...)
		case ' ':
			b = append(b, ' ')
		}
	}
	return b
}

// appendText appends a text string [min, max] (clause 4.2.2.10): a
// substring of the pool of a length uniform in [min, max], at an offset
// uniform over the pool.
func appendText(b []byte, s *stream, min, max int) []byte {
	p := textPool()
	off := s.intn(uint64(len(p) - max + 1))
	n := s.between(int64(min), int64(max))
	return append(b, p[off:off+uint64(n)]...)
}

// vchars are the 64 characters of a random v-string (clause 4.2.2.7).
const vchars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ, "

// appendVString appends a random v-string [min, max]: a length uniform in
// [min, max] of characters drawn uniformly from vchars.
func appendVString(b []byte, s *stream, min, max int) []byte {
	n := s.between(int64(min), int64(max))
	for range n {
		b = append(b, vchars[s.intn(uint64(len(vchars)))])
	}
	return b
}

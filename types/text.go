package types

// AppendText appends the PostgreSQL text output form of row i of v, which
// must not be NULL: integers and floats as PostgreSQL 15 prints them, bool
// as t/f, bytea as \x<hex>, jsonb normalized, vector as [1,2,3], tensors as
// PostgreSQL array literals {{...},{...}}.
func AppendText(dst []byte, v *Vec, i int) []byte {
	panic("TODO")
}

// AppendParsed parses s as PostgreSQL text input for v.Type and appends the
// value to v. Errors carry SQLSTATEs: 22P02 bad syntax, 22003 out of range,
// 22000 wrong tensor shape or vector dimension, 22001 too long for varchar(n).
func AppendParsed(v *Vec, s string) error {
	panic("TODO")
}

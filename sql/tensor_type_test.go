package sql

import (
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestTensorTypeBounds checks that a type is bounded wherever it is
// written: a column, a cast (ALTER TABLE does not exist yet).
func TestTensorTypeBounds(t *testing.T) {
	for _, c := range []struct {
		sql  string
		code pgerror.Code
		msg  string
	}{
		{"CREATE TABLE t (x uint8[100000][100000])", pgerror.ProgramLimitExceeded,
			"tensor type uint8[100000][100000] is 10000000000 bytes, over the 1 GB limit of a value"},
		{"SELECT NULL::float32[65536][65536]", pgerror.ProgramLimitExceeded, "is 17179869184 bytes"},
		{"SELECT CAST(x AS bigint[2147483647][2147483647][2147483647]) FROM t", pgerror.ProgramLimitExceeded,
			"is more than 9223372036854775807 bytes"},
		{"CREATE TABLE t (y uint8[][100000][100000])", pgerror.ProgramLimitExceeded, "is at least 10000000000 bytes"},
		{"CREATE TABLE t (v vector(16001))", pgerror.InvalidParameterValue, "dimensions for type vector cannot exceed 16000"},
		{"CREATE TABLE t (x uint8" + strings.Repeat("[1]", 33) + ")", pgerror.ProgramLimitExceeded,
			"number of tensor dimensions (33) exceeds the maximum allowed (32)"},
		{"CREATE TABLE t (x uint8[32767][32768], y uint8" + strings.Repeat("[1]", 32) + ", v vector(16000))", "", ""},
	} {
		_, err := Parse(c.sql)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.sql, err)
			}
			continue
		}
		if pgerror.GetCode(err) != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s %q", c.sql, err, c.code, c.msg)
		}
	}
}

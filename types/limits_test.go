package types

import (
	"math"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestCheckDeclared(t *testing.T) {
	dims := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = 1
		}
		return s
	}
	for _, c := range []struct {
		typ  Type
		code pgerror.Code
		msg  string
	}{
		{TensorOf(DTUint8, 224, 224, 3), "", ""},
		{TensorOf(DTUint8, 1<<15-1, 1<<15), "", ""},
		{TensorOf(DTUint8, 1<<15, 1<<15), pgerror.ProgramLimitExceeded, "is 1073741824 bytes"},
		{TensorOf(DTUint8, 100000, 100000), pgerror.ProgramLimitExceeded,
			"tensor type uint8[100000][100000] is 10000000000 bytes, over the 1 GB limit of a value"},
		{TensorOf(DTFloat64, math.MaxInt32, math.MaxInt32, math.MaxInt32), pgerror.ProgramLimitExceeded,
			"is more than 9223372036854775807 bytes, over the 1 GB limit"},
		{TensorOf(DTUint8, Ragged, 100000, 100000), pgerror.ProgramLimitExceeded,
			"tensor type uint8[][100000][100000] is at least 10000000000 bytes where it is not empty"},
		{TensorOf(DTFloat32, Ragged, Ragged), "", ""},
		{TensorOf(DTUint8, dims(MaxTensorDims)...), "", ""},
		{TensorOf(DTUint8, dims(MaxTensorDims+1)...), pgerror.ProgramLimitExceeded,
			"number of tensor dimensions (33) exceeds the maximum allowed (32)"},
		{VectorOf(16000), "", ""},
	} {
		err := CheckDeclared(c.typ)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.typ, err)
			}
			continue
		}
		if pgerror.GetCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want %s %q", c.typ, err, c.code, c.msg)
		}
	}
}

func TestRowBytes(t *testing.T) {
	for _, c := range []struct {
		typ   Type
		n     int64
		fixed bool
	}{
		{VectorOf(16000), 64000, true},
		{HalfVecOf(10), 20, true},
		{VectorOf(0), 0, false},
		{TensorOf(DTFloat32, 3, 4), 48, true},
		{TensorOf(DTInt16, Ragged, 4), 8, false},
		{TensorOf(DTFloat64, math.MaxInt32, math.MaxInt32, math.MaxInt32), math.MaxInt64, true},
		{TypInt4, 0, false},
	} {
		n, fixed := c.typ.RowBytes()
		if n != c.n || fixed != c.fixed {
			t.Errorf("%s: RowBytes %d, %v; want %d, %v", c.typ, n, fixed, c.n, c.fixed)
		}
	}
}

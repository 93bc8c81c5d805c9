package exec

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// FuzzCopyFrom feeds arbitrary bytes to the COPY decoders of every format
// over a table of every kind of column: they must return rows or an error,
// never panic. go test -run XXX -fuzz FuzzCopyFrom ./exec
func FuzzCopyFrom(f *testing.F) {
	f.Add(uint8(0), []byte("1\tx\t1.5\tt\t{1,2}\t[1,2]\t\\x00\t{\"a\":1}\t{{1},{2}}\n\\.\n"))
	f.Add(uint8(1), []byte("1,\"x\ny\",,t,\"{1,2}\",\"[1,2]\",,\"{}\",\"{{1}}\"\n"))
	f.Add(uint8(2), []byte(copySignature+"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x04\x00\x00\x00\x01\xff\xff\xff\xff"))
	f.Add(uint8(2), append([]byte(copySignature+"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09"), arrayBytes(21, []int32{2}, i16(1), i16(2))...))
	colTypes := []types.Type{types.TypInt4, types.TypText, types.TypFloat8, types.TypBool,
		types.TensorOf(types.DTUint8, 2), types.VectorOf(2), types.TypBytea, types.TypJSONB,
		types.TensorOf(types.DTFloat16, types.Ragged, types.Ragged)}
	f.Fuzz(func(t *testing.T, format uint8, data []byte) {
		opts := []plan.CopyOptions{textOpts, csvOpts, {Format: plan.CopyBinary}}[format%3]
		if format%5 == 4 {
			opts.Header = plan.HeaderMatch
		}
		cf, _ := testCopy(t, opts, colTypes...)
		_, _ = cf.run(bufio.NewReaderSize(bytes.NewReader(data), 16))
	})
}

package wire

import (
	"encoding/binary"

	"github.com/deeplaked/deeplaked/types"
)

// appendDataRow appends the DataRow message for row i of cols to dst, each
// value in text format and NULL as length -1. It encodes in place, so a
// result streams without allocating once dst has grown.
func appendDataRow(dst []byte, cols []*types.Vec, i int) []byte {
	start := len(dst)
	dst = append(dst, 'D', 0, 0, 0, 0, byte(len(cols)>>8), byte(len(cols)))
	for _, v := range cols {
		if v.Nulls[i] {
			dst = append(dst, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lp := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = types.AppendText(dst, v, i)
		binary.BigEndian.PutUint32(dst[lp:], uint32(len(dst)-lp-4))
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

// appendDataRowFormats is appendDataRow with a format code per column:
// 1 sends the value in its type's binary form.
func appendDataRowFormats(dst []byte, cols []*types.Vec, i int, formats []int16, codec *types.BinaryCodec) []byte {
	start := len(dst)
	dst = append(dst, 'D', 0, 0, 0, 0, byte(len(cols)>>8), byte(len(cols)))
	for k, v := range cols {
		if v.Nulls[i] {
			dst = append(dst, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lp := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if formats[k] == 1 {
			dst = codec.AppendSend(dst, v, i)
		} else {
			dst = types.AppendText(dst, v, i)
		}
		binary.BigEndian.PutUint32(dst[lp:], uint32(len(dst)-lp-4))
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst
}

package exec

import (
	"encoding/binary"

	"github.com/deeplaked/deeplaked/types"
)

// appendBinaryRow appends row i in binary COPY format: an int16 field
// count, then per field an int32 length (-1 for NULL) and the value in its
// type's binary send form. The forms are the ones binaryReader decodes.
func (c *CopyTo) appendBinaryRow(dst []byte, cols []*types.Vec, i int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cols)))
	for _, v := range cols {
		if v.Nulls[i] {
			dst = append(dst, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lp := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = c.codec.AppendSend(dst, v, i)
		binary.BigEndian.PutUint32(dst[lp:], uint32(len(dst)-lp-4))
	}
	return dst
}

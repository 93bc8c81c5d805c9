package storage

import (
	"errors"
	"fmt"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// ErrCorruption marks every error caused by stored bytes that fail their
// checks (bad checksum, impossible lengths, unknown format version). It
// carries SQLSTATE XX001; match it with errors.Is.
var ErrCorruption = pgerror.New(pgerror.DataCorrupted, "data corrupted")

// corruptionf returns an XX001 error that wraps ErrCorruption.
func corruptionf(format string, args ...any) error {
	return pgerror.Wrapf(ErrCorruption, pgerror.DataCorrupted, format, args...)
}

// ioErrorf returns a 58030 error wrapping err, for failures of the
// underlying stores.
func ioErrorf(err error, format string, args ...any) error {
	if pe := (*pgerror.Error)(nil); errors.As(err, &pe) {
		// Already classified where it was made (a commit that lost to
		// another server's, say).
		return pgerror.Wrapf(err, pe.Code, format, args...)
	}
	return pgerror.Wrapf(err, pgerror.IOError, format, args...)
}

func undefinedTable(name string) error {
	return pgerror.Newf(pgerror.UndefinedTable, "relation %q does not exist", name)
}

// assertf reports an internal invariant violation (XX000).
func assertf(format string, args ...any) error {
	return pgerror.AssertionFailedf("storage: %s", fmt.Sprintf(format, args...))
}

// inTable prefixes err's message with where it happened (naming the
// table), keeping its SQLSTATE and its chain for errors.Is.
func inTable(err error, format string, args ...any) error {
	return pgerror.Wrapf(err, pgerror.GetCode(err), format, args...)
}

// decodeBuffered decodes a buffered row (types.AppendRow's encoding, the
// value of a t<id>r<row id> key after its xmin) into dec's Vecs; a
// malformed one is corruption. Tables have no ALTER, so the descriptor
// that wrote a row also reads it.
func decodeBuffered(dec *types.RowDecoder, data []byte) error {
	if err := dec.Decode(data); err != nil {
		return corruptionf("buffered row: %v", err)
	}
	return nil
}

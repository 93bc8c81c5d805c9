// Package session runs SQL statements for one client connection: it keeps the
// session's settings and transaction state and drives each statement through
// sql (parse, bind), planner and exec, writing results to a ResultWriter.
package session

import (
	"io"

	"github.com/deeplaked/deeplaked/types"
)

// Column describes one result column as RowDescription reports it.
type Column struct {
	Name string
	Type types.Type
	// TableOID and ColumnNum identify the source column, or are 0.
	TableOID  uint32
	ColumnNum int16
}

// ResultWriter receives the results of the statements a session runs. wire/
// implements it on top of the protocol; calls for one statement arrive in
// the order WriteColumns, WriteBatch*, WriteComplete.
type ResultWriter interface {
	// WriteColumns starts the result of a row-returning statement.
	WriteColumns(cols []Column) error
	// WriteBatch sends every row of b; b.Cols line up with the columns.
	// b is borrowed: valid only until WriteBatch returns.
	WriteBatch(b *types.Batch) error
	// WriteComplete ends one statement with its command tag ("SELECT 3", "INSERT 0 1").
	WriteComplete(tag string) error
	// WriteEmpty answers an empty query string.
	WriteEmpty() error
	// CopyIn starts the data transfer of COPY FROM STDIN: it asks the
	// client for ncols columns of data, in binary format when binary is set
	// and in text otherwise, and returns the data stream: the bytes of the
	// client's CopyData messages, then io.EOF at its CopyDone. A CopyFail
	// ends the stream with a 57014 error. The reader is valid until the
	// statement ends; the statement ends with WriteComplete as usual.
	CopyIn(binary bool, ncols int) (io.Reader, error)
	// CopyOut starts the data transfer of COPY TO STDOUT: it tells the
	// client that ncols columns follow, in binary format when binary is set
	// and in text otherwise, and returns the stream to write them to: each
	// Write is one CopyData message (PostgreSQL sends one per row), and the
	// slice is not kept. The statement ends with WriteComplete, which ends
	// the data first; an error ends it without.
	CopyOut(binary bool, ncols int) (io.Writer, error)
}

// Transaction status bytes for ReadyForQuery.
const (
	TxIdle   byte = 'I'
	TxActive byte = 'T'
	TxFailed byte = 'E'
)

// A SharedMemoryWriter places the frames of its next COPY TO STDOUT in a
// memory area of size bytes that it shares with the client
// (docs/tensor-stream.md, Shared memory), or says why it cannot.
type SharedMemoryWriter interface {
	ShareMemory(size int64) error
}

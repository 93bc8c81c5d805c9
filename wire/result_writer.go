package wire

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
	"github.com/deeplaked/deeplaked/types"
)

// resultWriter sends statement results as protocol messages. It is reused
// for every query of its connection.
type resultWriter struct {
	c *conn
	// ncols is the column count of the current row-returning statement, or
	// -1 when no RowDescription is open.
	ncols int
	// rd, names, cc and cir are reused message buffers.
	rd    pgproto3.RowDescription
	names []byte
	cc    pgproto3.CommandComplete
	cir   pgproto3.CopyInResponse
	// ctx is the running query's context.
	ctx context.Context
	// copyIn is the data stream of the running COPY FROM STDIN.
	copyIn copyInReader
	// copyOut is the data stream of the running COPY TO STDOUT.
	copyOut copyOutWriter
	// extended is set while a portal runs (Execute): its RowDescription
	// went out with Describe, so WriteColumns sends none. formats holds
	// the portal's result format codes (nil: all text).
	extended bool
	formats  []int16
	// binary is set when some result column goes out in binary format;
	// codec encodes those.
	binary bool
	codec  types.BinaryCodec
}

var _ session.ResultWriter = (*resultWriter)(nil)

// reset prepares w for a new query running under ctx.
func (w *resultWriter) reset(ctx context.Context) {
	w.ncols = -1
	w.copyOut.active = false
	w.copyOut.endShared()
	w.ctx = ctx
	w.extended, w.formats, w.binary = false, nil, false
}

// end cleans up after a query.
func (w *resultWriter) end() {
	w.copyIn.end()
	w.copyOut.endShared()
	w.ctx = nil
}

// WriteColumns starts the result of a row-returning statement: it sends
// the RowDescription, every column in text format, unless a portal runs.
func (w *resultWriter) WriteColumns(cols []session.Column) error {
	w.ncols = len(cols)
	w.binary = false
	if w.extended {
		for _, f := range w.formats {
			w.binary = w.binary || f == 1
		}
		if w.binary && len(w.formats) != len(cols) {
			return pgerror.AssertionFailedf("portal has %d result formats, statement %d columns", len(w.formats), len(cols))
		}
		return nil
	}
	w.describe(cols, nil)
	w.c.send(&w.rd)
	return w.result()
}

// describe builds the RowDescription of cols in w.rd, with the given
// format codes (nil: text).
func (w *resultWriter) describe(cols []session.Column, formats []int16) {
	w.names = w.names[:0]
	for _, col := range cols {
		w.names = append(w.names, col.Name...)
	}
	w.rd.Fields = w.rd.Fields[:0]
	off := 0
	for _, col := range cols {
		name := w.names[off : off+len(col.Name) : off+len(col.Name)]
		off += len(col.Name)
		w.rd.Fields = append(w.rd.Fields, pgproto3.FieldDescription{
			Name:                 name,
			TableOID:             col.TableOID,
			TableAttributeNumber: uint16(col.ColumnNum),
			DataTypeOID:          col.Type.OID(),
			DataTypeSize:         col.Type.Size(),
			TypeModifier:         col.Type.Typmod(),
			Format:               0,
		})
		if formats != nil {
			w.rd.Fields[len(w.rd.Fields)-1].Format = formats[len(w.rd.Fields)-1]
		}
	}
}

// WriteBatch sends one DataRow per row of b.
func (w *resultWriter) WriteBatch(b *types.Batch) error {
	if w.ncols != len(b.Cols) {
		if w.ncols < 0 {
			return pgerror.AssertionFailedf("rows written before their columns")
		}
		return pgerror.AssertionFailedf("batch has %d columns, RowDescription %d", len(b.Cols), w.ncols)
	}
	n := b.Len()
	for _, v := range b.Cols {
		if v.Len() < n {
			return pgerror.AssertionFailedf("column of type %s has %d rows, batch %d", v.Type, v.Len(), n)
		}
	}
	c := w.c
	for i := 0; i < n; i++ {
		if c.werr != nil {
			break
		}
		if w.binary {
			c.wbuf = appendDataRowFormats(c.wbuf, b.Cols, i, w.formats, &w.codec)
		} else {
			c.wbuf = appendDataRow(c.wbuf, b.Cols, i)
		}
		c.committed = len(c.wbuf)
		if len(c.wbuf) >= flushThreshold {
			_ = c.flush()
		}
	}
	return w.result()
}

// WriteComplete ends a statement with its command tag.
func (w *resultWriter) WriteComplete(tag string) error {
	w.ncols = -1
	w.copyOut.done()
	w.cc.CommandTag = append(w.cc.CommandTag[:0], tag...)
	w.c.send(&w.cc)
	return w.result()
}

// SetStatementContext makes ctx the context a COPY FROM STDIN of the
// running statement waits for the client under, so that the statement's
// own end (statement_timeout) interrupts the wait as a cancel does.
func (w *resultWriter) SetStatementContext(ctx context.Context) { w.ctx = ctx }

var _ session.StatementContextSetter = (*resultWriter)(nil)

// ParameterStatus reports a changed setting.
func (w *resultWriter) ParameterStatus(name, value string) error {
	w.c.send(&pgproto3.ParameterStatus{Name: name, Value: value})
	return w.result()
}

var _ session.ParameterStatusWriter = (*resultWriter)(nil)

// Notice sends a NoticeResponse.
func (w *resultWriter) Notice(n *pgerror.Error) error {
	w.c.send((*pgproto3.NoticeResponse)(errorResponse(n, n.Severity)))
	return w.result()
}

var _ session.NoticeWriter = (*resultWriter)(nil)

// WriteEmpty answers an empty query string.
func (w *resultWriter) WriteEmpty() error {
	w.ncols = -1
	w.c.send(&pgproto3.EmptyQueryResponse{})
	return w.result()
}

// result flushes if enough is buffered and reports a dead connection as
// 08006, so the session stops producing rows nobody reads.
func (w *resultWriter) result() error {
	if err := w.c.maybeFlush(); err != nil {
		return pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
	}
	return nil
}

package wire

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
)

// The extended query protocol: Parse, Bind, Describe, Execute and Close
// answer with their own messages and no ReadyForQuery; Sync ends the run
// (committing outside a transaction block) with ReadyForQuery. After an
// error every message up to the next Sync is skipped, as in PostgreSQL.

// extendedMessage answers one extended-protocol message other than Sync.
func (c *conn) extendedMessage(msg pgproto3.FrontendMessage) {
	if c.ignoreTillSync {
		return
	}
	var err error
	switch m := msg.(type) {
	case *pgproto3.Parse:
		err = c.parse(m)
	case *pgproto3.Bind:
		err = c.bind(m)
	case *pgproto3.Describe:
		err = c.describe(m)
	case *pgproto3.Execute:
		err = c.execute(m)
	case *pgproto3.Close:
		switch m.ObjectType {
		case 'S':
			c.sess.CloseStatement(m.Name)
		case 'P':
			c.sess.ClosePortal(m.Name)
			delete(c.portalFormats, m.Name)
		default:
			err = pgerror.Newf(pgerror.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
		}
		if err == nil {
			c.send(&pgproto3.CloseComplete{})
		}
	}
	if err != nil {
		c.sendError(err)
		c.ignoreTillSync = true
	}
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if _, err := c.sess.Prepare(m.Name, m.Query, m.ParameterOIDs); err != nil {
		return err
	}
	c.send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	p, err := c.sess.Bind(m.DestinationPortal, m.PreparedStatement, m.ParameterFormatCodes, m.Parameters)
	if err != nil {
		return err
	}
	ncols := len(p.Columns())
	rf := m.ResultFormatCodes
	if len(rf) > 1 && len(rf) != ncols {
		c.sess.ClosePortal(m.DestinationPortal)
		return pgerror.Newf(pgerror.ProtocolViolation, "bind message has %d result formats but query has %d columns", len(rf), ncols)
	}
	formats := make([]int16, ncols)
	for i := range formats {
		switch {
		case len(rf) == 1:
			formats[i] = rf[0]
		case len(rf) > 1:
			formats[i] = rf[i]
		}
		if formats[i] != 0 && formats[i] != 1 {
			c.sess.ClosePortal(m.DestinationPortal)
			return pgerror.Newf(pgerror.ProtocolViolation, "unsupported format code: %d", formats[i])
		}
	}
	if c.portalFormats == nil {
		c.portalFormats = make(map[string][]int16)
	}
	c.portalFormats[m.DestinationPortal] = formats
	c.send(&pgproto3.BindComplete{})
	return nil
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		ps, err := c.sess.Statement(m.Name)
		if err != nil {
			return err
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: ps.ParamOIDs()})
		c.sendRowDescription(ps.Columns(), nil)
	case 'P':
		p, err := c.sess.Portal(m.Name)
		if err != nil {
			return err
		}
		c.sendRowDescription(p.Columns(), c.portalFormats[m.Name])
	default:
		return pgerror.Newf(pgerror.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

// sendRowDescription sends the RowDescription of cols with the given
// format codes (nil: text), or NoData when there are no columns.
func (c *conn) sendRowDescription(cols []session.Column, formats []int16) {
	if len(cols) == 0 {
		c.send(&pgproto3.NoData{})
		return
	}
	c.rw.describe(cols, formats)
	c.send(&c.rw.rd)
}

func (c *conn) execute(m *pgproto3.Execute) error {
	ctx, done := c.startStatement()
	defer done()
	c.rw.reset(ctx)
	c.rw.extended = true
	c.rw.formats = c.portalFormats[m.Portal]
	defer c.rw.end()
	suspended, err := c.sess.Execute(ctx, m.Portal, int(int32(m.MaxRows)), &c.rw)
	if err != nil {
		return err
	}
	if suspended {
		c.send(&pgproto3.PortalSuspended{})
	}
	return nil
}

// sync ends a run of extended-protocol messages.
func (c *conn) sync() {
	c.ignoreTillSync = false
	if err := c.syncSession(); err != nil {
		c.sendError(err)
	}
	if ss, ok := c.sess.(settingsSession); ok {
		_ = ss.ReportSettings(&c.rw)
	}
	// Portals of an open transaction block outlive Sync; the others
	// are gone.
	for name := range c.portalFormats {
		if _, err := c.sess.Portal(name); err != nil {
			delete(c.portalFormats, name)
		}
	}
	c.readyForQuery()
}

// syncSession commits the implicit transaction, containing a panic.
func (c *conn) syncSession() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.logPanic(r)
			err = pgerror.AssertionFailedf("%v", r)
		}
	}()
	return c.sess.Sync()
}

// startStatement makes the context a statement runs under, which a
// CancelRequest or server shutdown cancels; done releases it.
func (c *conn) startStatement() (context.Context, func()) {
	ctx, cancel := context.WithCancel(c.srv.baseCtx)
	c.mu.Lock()
	if c.closing {
		cancel()
	}
	c.queryCancel = cancel
	c.mu.Unlock()
	return ctx, func() {
		c.mu.Lock()
		c.queryCancel = nil
		c.mu.Unlock()
		cancel()
	}
}

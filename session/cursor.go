package session

import (
	"context"

	"github.com/deeplaked/deeplaked/exec"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// cursor produces the rows of a portal (a protocol-level portal or a SQL
// cursor) in pieces.
type cursor struct {
	op     exec.Operator
	cancel context.CancelFunc
	// batch is the current batch and pos the next row in it.
	batch *types.Batch
	pos   int
	// window is a view of the rows sent next.
	window types.Batch
	// tag is the completion tag of a materialized statement.
	tag string
	// env is what the operators share, closed with them.
	env *exec.Env
}

// open builds the operators of a query. They run under a context of their
// own, since a suspended portal outlives the Execute that started it; the
// cancellation of each call that fetches from it reaches it during that
// call.
func (c *cursor) open(s *Session, ctx context.Context, node plan.Node) error {
	opCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	env := s.env(opCtx)
	op, err := exec.Build(env, node)
	if err != nil {
		cancel()
		env.Close()
		return err
	}
	c.op, c.cancel, c.env = op, cancel, env
	return nil
}

// openMaterialized serves rows a statement has already produced.
func (c *cursor) openMaterialized(rows *types.Batch, tag string) {
	c.batch, c.pos, c.tag = rows, 0, tag
}

// fetch sends up to maxRows rows to w (0: all that are left), or skips
// them, and returns how many there were.
func (c *cursor) fetch(ctx context.Context, maxRows int, w ResultWriter, skip bool) (int, error) {
	if c.cancel != nil {
		stop := context.AfterFunc(ctx, c.cancel)
		defer stop()
	}
	sent := 0
	for maxRows <= 0 || sent < maxRows {
		if c.batch == nil || c.pos >= c.batch.Len() {
			if c.op == nil {
				break
			}
			b, err := c.op.Next()
			if err != nil {
				return sent, err
			}
			if b == nil {
				c.closeOp()
				break
			}
			c.batch, c.pos = b, 0
			continue
		}
		n := c.batch.Len() - c.pos
		if maxRows > 0 && n > maxRows-sent {
			n = maxRows - sent
		}
		if !skip {
			c.batch.Window(&c.window, c.pos, c.pos+n)
			if err := w.WriteBatch(&c.window); err != nil {
				return sent, err
			}
		}
		c.pos += n
		sent += n
	}
	return sent, nil
}

// closeOp releases the operators; rows already fetched stay readable.
func (c *cursor) closeOp() {
	if c.op != nil {
		c.op.Close()
		c.op = nil
		c.batch = nil
	}
	if c.env != nil {
		c.env.Close()
		c.env = nil
	}
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
}

func (c *cursor) close() {
	c.closeOp()
	c.batch = nil
}

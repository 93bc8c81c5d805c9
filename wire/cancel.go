package wire

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"sync"
)

// cancelKeys maps the BackendKeyData handed to each session to its
// connection, so that a CancelRequest arriving on another socket can find
// the query to cancel.
type cancelKeys struct {
	mu    sync.Mutex
	byPID map[uint32]*conn
}

// assign gives c a fresh process ID, unique among live connections, and a
// random secret key.
func (k *cancelKeys) assign(c *conn) {
	var b [8]byte
	k.mu.Lock()
	defer k.mu.Unlock()
	for {
		_, _ = rand.Read(b[:])
		// Keep the process ID positive: libpq and JDBC hold it in a signed int.
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff
		if pid == 0 || k.byPID[pid] != nil {
			continue
		}
		c.pid = pid
		copy(c.secret[:], b[4:])
		k.byPID[pid] = c
		return
	}
}

// remove forgets c's key.
func (k *cancelKeys) remove(c *conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c.pid != 0 && k.byPID[c.pid] == c {
		delete(k.byPID, c.pid)
	}
}

// lookup returns the connection that owns pid and secret, or nil.
func (k *cancelKeys) lookup(pid uint32, secret []byte) *conn {
	k.mu.Lock()
	c := k.byPID[pid]
	k.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret[:], secret) != 1 {
		return nil
	}
	return c
}

// handleCancelRequest cancels the query running on the connection named by
// the body of a CancelRequest packet (process ID, then secret key). As in
// PostgreSQL, the requester gets no answer either way.
func (s *Server) handleCancelRequest(body []byte) {
	if len(body) < 8 {
		return
	}
	if c := s.keys.lookup(binary.BigEndian.Uint32(body[:4]), body[4:]); c != nil {
		c.cancelQuery()
	}
}

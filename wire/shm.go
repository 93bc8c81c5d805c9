package wire

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/deeplaked/deeplaked/pgerror"
)

// The shared-memory area of a tensor stream (docs/tensor-stream.md, Shared
// memory): a control page, then frames placed in the gaps between the
// frames the client holds.
const (
	shmControl  = 4096
	shmReleased = 64  // offset of the released array in the control page
	shmSlots    = 256 // entries of the released array: frames out at once
	shmRefLen   = 40  // bytes of a reference
	shmAlign    = 64
	shmVersion  = 1
	shmMaxAreas = 8 << 30 // bytes of areas the server holds at once, over all connections
	shmMagic    = "DLSM"
	shmRefMagic = "DLSR"
	// Smaller frames go through the socket, where they share writes: a
	// reference costs a write and a wakeup of its own.
	shmMinFrame = flushThreshold
	// shmWait bounds how long a frame waits for room in the area before it
	// goes through the socket: a client that reads slowly releases frames
	// slowly, one that keeps them never does.
	shmWait = 200 * time.Millisecond
	shmGrow = 4 << 20
)

// shmHeld counts the bytes of the areas that exist, so that clients
// asking for large areas cannot make the server exhaust memory: past
// shmMaxAreas a stream sends its frames through the socket.
var shmHeld atomic.Int64

// shmFrame is a frame the client holds: its reference's sequence number
// and its place in the area.
type shmFrame struct {
	seq      uint64
	off, end int
}

// shmArea is one stream's area. Frames go into [shmControl, size), each
// into the first gap between the frames the client holds that has room
// (first fit): a frame the client keeps does not stop the others' space
// from being reused.
type shmArea struct {
	fd   int // the memfd, kept open to allocate the area's memory; -1 once closed
	mem  []byte
	size int
	// allocated is how much of the area, from its start, has its memory
	// allocated; place grows it as frames first reach further.
	allocated int
	// sent is set once the descriptor went to the client with a
	// reference; references are only sent after it.
	sent bool
	seq  uint64
	// held are the frames the client holds, by offset.
	held []shmFrame
	// starved is set when a frame found no room within shmWait; it stays
	// set until the client holds half of the area or less.
	starved bool
	ref     [shmRefLen]byte
}

// newShmArea creates an area of size bytes (a multiple of the page
// size), sealed against resizing so that the client cannot shrink it
// under the server. Its memory is allocated (fallocate) before the
// server writes into it, so that a write cannot fault for want of memory:
// the control page now, the rest as frames first reach further.
func newShmArea(size int) (*shmArea, error) {
	if shmHeld.Add(int64(size)) > shmMaxAreas {
		shmHeld.Add(-int64(size))
		return nil, fmt.Errorf("the server holds %d bytes of shared memory areas already", shmMaxAreas)
	}
	fd, err := unix.MemfdCreate("deeplaked-stream", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		shmHeld.Add(-int64(size))
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	fail := func(what string, err error) (*shmArea, error) {
		unix.Close(fd)
		shmHeld.Add(-int64(size))
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	if err := unix.Fallocate(fd, 0, 0, shmControl); err != nil {
		return fail("fallocate", err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return fail("sealing", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	copy(mem, shmMagic)
	binary.LittleEndian.PutUint16(mem[4:], shmVersion)
	binary.LittleEndian.PutUint64(mem[8:], uint64(size))
	a := &shmArea{fd: fd, mem: mem, size: size, allocated: shmControl, held: make([]shmFrame, 0, shmSlots)}
	copy(a.ref[:], shmRefMagic)
	binary.LittleEndian.PutUint16(a.ref[4:], shmVersion)
	binary.LittleEndian.PutUint64(a.ref[32:], uint64(size))
	return a, nil
}

// close unmaps the server's side; the memory goes once the client unmaps
// its side too.
func (a *shmArea) close() {
	if a.fd >= 0 && a.mem != nil {
		// What the client holds stays until it lets go; give the rest of
		// the memory back now, as the client may keep a frame (and so
		// the whole area) long after the stream.
		a.reclaim()
		start := shmControl
		for i := 0; i <= len(a.held); i++ {
			end := a.allocated
			if i < len(a.held) {
				end = min(a.held[i].off, a.allocated)
			}
			if end > start {
				_ = unix.Fallocate(a.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(start), int64(end-start))
			}
			if i < len(a.held) {
				start = a.held[i].end
			}
		}
	}
	if a.fd >= 0 {
		unix.Close(a.fd)
		a.fd = -1
	}
	if a.mem != nil {
		_ = unix.Munmap(a.mem)
		a.mem = nil
		shmHeld.Add(-int64(a.size))
	}
}

// released reports whether the client released the frame of seq.
func (a *shmArea) released(seq uint64) bool {
	p := (*uint64)(unsafe.Pointer(&a.mem[shmReleased+8*(seq%shmSlots)]))
	return atomic.LoadUint64(p) == seq+1
}

// shmFits reports whether a frame of n bytes may go into an area of size
// bytes: one of shmMinFrame bytes or more that takes at most half of the
// area after its control page.
func shmFits(n, size int) bool {
	return n >= shmMinFrame && (n+shmAlign-1)&^(shmAlign-1) <= (size-shmControl)/2
}

// reclaim drops the held frames the client released, in any order.
func (a *shmArea) reclaim() {
	k := 0
	for _, f := range a.held {
		if !a.released(f.seq) {
			a.held[k] = f
			k++
		}
	}
	a.held = a.held[:k]
}

// fit returns the offset of the first gap between held frames, from the
// area's start, with room for need bytes, and the index in held the frame
// takes; -1 when there is none. First fit: a reader that releases frames
// as it goes has its frames placed again and again in the area's first
// few, so a stream touches (and allocates) no more of the area than it
// needs.
func (a *shmArea) fit(need int) (off, at int) {
	start := shmControl
	for i := 0; i <= len(a.held); i++ {
		end := a.size
		if i < len(a.held) {
			end = a.held[i].off
		}
		if start+need <= end {
			return start, i
		}
		if i < len(a.held) {
			start = a.held[i].end
		}
	}
	return -1, 0
}

// windowFull reports whether a held frame is shmSlots - 1 frames or more
// behind the next one: only its release makes room then.
func (a *shmArea) windowFull() bool {
	for _, f := range a.held {
		if a.seq-f.seq >= shmSlots {
			return true
		}
	}
	return false
}

// heldBytes returns the bytes of the frames the client holds.
func (a *shmArea) heldBytes() int {
	n := 0
	for _, f := range a.held {
		n += f.end - f.off
	}
	return n
}

// place copies the concatenation of bufs, n bytes, into the area, or
// has fill write the n bytes there when it is not nil, and returns the
// frame's reference, or nil when it has no room for it. A frame never
// overwrites a held one. Nor does it take the released entry of a held
// frame: a frame's sequence number is less than shmSlots past the oldest
// held one's. An error of fill is returned, the frame not placed.
func (a *shmArea) place(bufs [][]byte, n int, fill func([]byte) error) ([]byte, error) {
	a.reclaim()
	need := (n + shmAlign - 1) &^ (shmAlign - 1)
	if len(a.held) == shmSlots || !shmFits(n, a.size) {
		return nil, nil
	}
	if a.windowFull() {
		return nil, nil
	}
	off, at := a.fit(need)
	if off < 0 || !a.allocate(off+need) {
		return nil, nil
	}
	if fill != nil {
		if err := fill(a.mem[off : off+n : off+n]); err != nil {
			return nil, err
		}
	} else {
		p := off
		for _, b := range bufs {
			p += copy(a.mem[p:], b)
		}
	}
	a.held = slices.Insert(a.held, at, shmFrame{seq: a.seq, off: off, end: off + need})
	binary.LittleEndian.PutUint64(a.ref[8:], a.seq)
	binary.LittleEndian.PutUint64(a.ref[16:], uint64(off))
	binary.LittleEndian.PutUint64(a.ref[24:], uint64(n))
	a.seq++
	return a.ref[:], nil
}

// allocate makes sure the area's memory is allocated up to end, growing
// it by at least shmGrow bytes at a time. It fails when the system has no
// memory for it: the frame then goes through the socket.
func (a *shmArea) allocate(end int) bool {
	if end <= a.allocated {
		return true
	}
	end = min(max(end, a.allocated+shmGrow), a.size)
	if err := unix.Fallocate(a.fd, 0, int64(a.allocated), int64(end-a.allocated)); err != nil {
		return false
	}
	a.allocated = end
	return true
}

// unixSocket returns the connection's Unix socket, or nil over TCP or
// TLS.
func (c *conn) unixSocket() *net.UnixConn {
	nc := c.nc
	if w, ok := nc.(*netConn); ok {
		if w.isTLS() {
			return nil
		}
		nc = w.conn()
	}
	uc, _ := nc.(*net.UnixConn)
	return uc
}

// ShareMemory asks that the next COPY TO STDOUT's frames be placed in a
// shared-memory area of size bytes (SHARED_MEMORY, checked by package
// sql), rounded up to pages; it fails with 0A000 unless the connection is
// a Unix socket.
func (w *resultWriter) ShareMemory(size int64) error {
	if w.c.unixSocket() == nil {
		return pgerror.New(pgerror.FeatureNotSupported, "SHARED_MEMORY needs a connection over the server's Unix socket").
			WithHint("Connect with host set to the server's --unix-socket-dir, on the server's machine.")
	}
	w.copyOut.shmSize = (int(size) + 4095) &^ 4095
	return nil
}

// FillFrame places a frame of n bytes in the stream's shared-memory area
// (SHARED_MEMORY), has fill write it there and sends its reference. It
// reports false, having called nothing, when the frame must go through
// WriteBuffers instead; an error of fill fails the statement, the frame
// not sent.
func (o *copyOutWriter) FillFrame(n int, fill func(dst []byte) error) (bool, error) {
	if c := o.c; c.werr != nil {
		return false, pgerror.Wrapf(c.werr, pgerror.ConnectionFailure, "could not send data to client")
	}
	if o.shmSize == 0 {
		return false, nil
	}
	return o.writeShared(nil, n, fill)
}

// writeShared places a frame of n bytes in the stream's area, the
// concatenation of bufs or what fill writes, and sends its reference; it
// reports false when the frame must go through the socket instead. The
// area is made with the first frame; the descriptor goes to the client
// with the first reference.
func (o *copyOutWriter) writeShared(bufs [][]byte, n int, fill func([]byte) error) (bool, error) {
	c := o.c
	if !shmFits(n, o.shmSize) {
		return false, nil
	}
	if o.shm == nil {
		if o.shmFailed {
			return false, nil
		}
		a, err := newShmArea(o.shmSize)
		if err != nil {
			o.shmFailed = true
			c.logger.Warn("no shared memory area for a tensor stream: frames go through the socket", "err", err)
			return false, nil
		}
		o.shm = a
	}
	a := o.shm
	ref, err := a.place(bufs, n, fill)
	if err != nil {
		return true, err
	}
	if ref == nil && !a.starved && !a.windowFull() {
		// Wait a while for the client to release frames.
		deadline := time.Now().Add(shmWait)
		ctx := c.rw.ctx
		for pause := 20 * time.Microsecond; ref == nil && time.Now().Before(deadline); pause = min(2*pause, time.Millisecond) {
			if ctx != nil && ctx.Err() != nil {
				break // canceled: the statement ends at its next step
			}
			time.Sleep(pause)
			if ref, err = a.place(bufs, n, fill); err != nil {
				return true, err
			}
		}
	}
	// Once a wait went unanswered the client keeps frames: the next ones
	// go through the socket without waiting until it holds half of the
	// area or less. (A reader that keeps some batches would otherwise
	// make every few frames wait in vain.)
	switch {
	case ref == nil:
		a.starved = true
		return false, nil
	case a.starved && a.heldBytes() <= (a.size-shmControl)/2:
		a.starved = false
	}
	c.wbuf = append(c.wbuf, 'd', 0, 0, 0, 0)
	binary.BigEndian.PutUint32(c.wbuf[len(c.wbuf)-4:], uint32(len(ref)+4))
	c.wbuf = append(c.wbuf, ref...)
	c.committed = len(c.wbuf)
	if a.sent {
		if err := c.flush(); err != nil {
			return true, pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
		}
		return true, nil
	}
	// The first reference: the descriptor travels with this write.
	uc := c.unixSocket()
	if uc == nil {
		return true, pgerror.New(pgerror.ConnectionFailure, "the connection is no longer a Unix socket")
	}
	k, _, err := uc.WriteMsgUnix(c.wbuf, unix.UnixRights(a.fd), nil)
	if err == nil && k < len(c.wbuf) {
		_, err = uc.Write(c.wbuf[k:]) // the descriptor went with the first part
	}
	if err := c.wrote(err); err != nil {
		return true, pgerror.Wrapf(err, pgerror.ConnectionFailure, "could not send data to client")
	}
	a.sent = true
	return true, nil
}

// endShared drops the stream's area and the wish for one.
func (o *copyOutWriter) endShared() {
	if o.shm != nil {
		o.shm.close()
		o.shm = nil
	}
	o.shmSize, o.shmFailed = 0, false
}

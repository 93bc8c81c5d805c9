package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shared-memory area (docs/tensor-stream.md, Shared memory).
const (
	// DefaultSharedMemory is the size of the area SHARED_MEMORY true asks
	// for.
	DefaultSharedMemory = 64 << 20

	shmControl  = 4096
	shmReleased = 64
	shmSlots    = 256
	shmRefLen   = 40
	shmMagic    = "DLSM"
	shmRefMagic = "DLSR"
	shmVersion  = 1
)

// rightsReader reads a Unix socket with recvmsg, keeping the file
// descriptors that arrive with the bytes (SCM_RIGHTS): a plain read over
// those bytes would close them.
type rightsReader struct {
	uc  *net.UnixConn
	oob []byte
	fds []int
	// truncated is set when descriptors were cut off (MSG_CTRUNC): the
	// area cannot be mapped then.
	truncated bool
}

func newRightsReader(uc *net.UnixConn) *rightsReader {
	return &rightsReader{uc: uc, oob: make([]byte, unix.CmsgSpace(4*4))}
}

func (r *rightsReader) Read(p []byte) (int, error) {
	n, oobn, flags, _, err := r.uc.ReadMsgUnix(p, r.oob)
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(r.oob[:oobn])
		if perr == nil {
			for i := range msgs {
				if fds, ferr := unix.ParseUnixRights(&msgs[i]); ferr == nil {
					r.fds = append(r.fds, fds...)
				}
			}
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		r.truncated = true
	}
	return n, err
}

// closeFDs closes the descriptors received and not taken.
func (r *rightsReader) closeFDs() {
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.fds = nil
}

// sharedArea is the client's mapping of a stream's area.
type sharedArea struct {
	mem []byte
}

// mapArea maps the area the server passed with its first reference.
func mapArea(rr *rightsReader, size uint64) (*sharedArea, error) {
	if rr.truncated {
		rr.closeFDs()
		return nil, errors.New("stream: the server sent more file descriptors than expected")
	}
	if len(rr.fds) != 1 {
		rr.closeFDs()
		return nil, fmt.Errorf("stream: a shared-memory reference came with %d file descriptors, not one", len(rr.fds))
	}
	fd := rr.fds[0]
	rr.fds = nil
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stream: the shared-memory area: %w", err)
	}
	if size < shmControl || size > 1<<40 || uint64(st.Size) != size {
		return nil, fmt.Errorf("stream: a shared-memory area of %d bytes, the reference says %d", st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("stream: mapping the shared-memory area: %w", err)
	}
	if string(mem[:4]) != shmMagic || binary.LittleEndian.Uint16(mem[4:]) != shmVersion {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("stream: the shared-memory area has magic %q, version %d", mem[:4], binary.LittleEndian.Uint16(mem[4:]))
	}
	return &sharedArea{mem: mem}, nil
}

// frame returns the frame a reference names and its sequence number.
func (a *sharedArea) frame(ref []byte) ([]byte, uint64, error) {
	seq := binary.LittleEndian.Uint64(ref[8:])
	off := binary.LittleEndian.Uint64(ref[16:])
	n := binary.LittleEndian.Uint64(ref[24:])
	size := uint64(len(a.mem))
	if binary.LittleEndian.Uint64(ref[32:]) != size || off < shmControl || off%Align != 0 || off > size || n > size-off {
		return nil, 0, fmt.Errorf("stream: a shared-memory reference to %d bytes at %d of an area of %d", n, off, size)
	}
	return a.mem[off : off+n : off+n], seq, nil
}

// release hands the frame of seq back to the server.
func (a *sharedArea) release(seq uint64) {
	p := (*uint64)(unsafe.Pointer(&a.mem[shmReleased+8*(seq%shmSlots)]))
	atomic.StoreUint64(p, seq+1)
}

func (a *sharedArea) unmap() {
	if a != nil && a.mem != nil {
		_ = unix.Munmap(a.mem)
		a.mem = nil
	}
}

// parseRef checks a CopyData payload of shmRefLen bytes for a reference.
func parseRef(b []byte) error {
	if string(b[:4]) != shmRefMagic {
		return fmt.Errorf("stream: a %d-byte message with magic %q where a shared-memory reference was expected", len(b), b[:4])
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != shmVersion {
		return fmt.Errorf("stream: shared-memory reference version %d (this client reads %d)", v, shmVersion)
	}
	return nil
}

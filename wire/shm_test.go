package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShmAreaRing places frames of random sizes in an area while a
// client releases them in random order, and checks that a frame the
// client holds is never written over, that frames lie in the area at
// 64-byte boundaries, that placing goes back to lower offsets, and that frames go
// through the socket only when it has no room.
func TestShmAreaRing(t *testing.T) {
	const size = 1 << 20
	before := shmHeld.Load()
	a, err := newShmArea(size)
	if err != nil {
		t.Fatal(err)
	}
	type held struct {
		seq      uint64
		off, n   int
		fill     byte
		released bool
	}
	var out []*held
	rng := rand.New(rand.NewPCG(1, 2))
	placed, refused, wrapped := 0, 0, 0
	lastOff := 0
	for i := range 5000 {
		n := shmMinFrame + rng.IntN(200<<10)
		if i%50 == 0 {
			n = size/2 + 1 // over half the area: always through the socket
		}
		fill := byte(i)
		frame := bytes.Repeat([]byte{fill}, n)
		// Two pieces, as a frame's header and buffers are.
		ref := placeBufs(a, [][]byte{frame[:n/3], frame[n/3:]}, n)
		if ref == nil {
			refused++
			if n <= size/2-shmControl {
				// Refused for want of room: the client must hold frames.
				live := 0
				for _, h := range out {
					if !h.released {
						live++
					}
				}
				if live == 0 {
					t.Fatalf("frame %d of %d bytes refused with nothing held", i, n)
				}
			}
		} else {
			placed++
			seq := binary.LittleEndian.Uint64(ref[8:])
			off := int(binary.LittleEndian.Uint64(ref[16:]))
			if string(ref[:4]) != shmRefMagic || int(binary.LittleEndian.Uint64(ref[24:])) != n || binary.LittleEndian.Uint64(ref[32:]) != size {
				t.Fatalf("reference %x", ref)
			}
			if off < shmControl || off%shmAlign != 0 || off+n > size {
				t.Fatalf("frame at %d of %d bytes", off, n)
			}
			if off < lastOff {
				wrapped++
			}
			lastOff = off
			out = append(out, &held{seq: seq, off: off, n: n, fill: fill})
		}
		// Every frame the client holds is intact.
		for _, h := range out {
			if h.released {
				continue
			}
			if b := a.mem[h.off : h.off+h.n]; b[0] != h.fill || b[h.n-1] != h.fill || bytes.Count(b, []byte{h.fill}) != h.n {
				t.Fatalf("held frame %d (at %d, %d bytes) was written over", h.seq, h.off, h.n)
			}
		}
		// The client releases some frames, in any order.
		for _, h := range out {
			if !h.released && rng.IntN(3) == 0 {
				binary.LittleEndian.PutUint64(a.mem[shmReleased+8*(h.seq%shmSlots):], h.seq+1)
				h.released = true
			}
		}
		if len(out) > 2*shmSlots {
			out = out[len(out)-shmSlots:]
		}
	}
	if placed < 3000 || refused < 100 || wrapped < 100 {
		t.Fatalf("%d frames placed, %d refused, %d wrap-arounds", placed, refused, wrapped)
	}
	if a.allocated != size {
		t.Fatalf("%d bytes allocated of %d after wrapping", a.allocated, size)
	}
	a.close()
	if shmHeld.Load() != before {
		t.Fatalf("%d bytes of areas held after close, %d before", shmHeld.Load(), before)
	}
}

// TestShmAreaSealed: the client cannot resize the area under the server.
func TestShmAreaSealed(t *testing.T) {
	a, err := newShmArea(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if err := unix.Ftruncate(a.fd, 4096); err == nil {
		t.Fatal("the area could be shrunk")
	}
	if err := unix.Ftruncate(a.fd, 2<<20); err == nil {
		t.Fatal("the area could be grown")
	}
}

// TestShmAreaLimit: past shmMaxAreas of areas, no area is made.
func TestShmAreaLimit(t *testing.T) {
	shmHeld.Add(shmMaxAreas)
	defer shmHeld.Add(-shmMaxAreas)
	if a, err := newShmArea(1 << 20); err == nil {
		a.close()
		t.Fatal("an area was made past the limit")
	}
}

// TestShmAreaKeptFrame: a frame the client keeps does not stop the rest
// of the area from being reused, up to shmSlots frames past it, whose
// released entries would be its own.
func TestShmAreaKeptFrame(t *testing.T) {
	a, err := newShmArea(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	release := func(seq uint64) {
		binary.LittleEndian.PutUint64(a.mem[shmReleased+8*(seq%shmSlots):], seq+1)
	}
	kept := bytes.Repeat([]byte{0xAB}, 100<<10)
	ref := placeBufs(a, [][]byte{kept}, len(kept))
	if ref == nil {
		t.Fatal("the first frame was not placed")
	}
	keptOff := int(binary.LittleEndian.Uint64(ref[16:]))
	frame := bytes.Repeat([]byte{0x11}, 150<<10)
	placed := 0
	for range 400 {
		ref := placeBufs(a, [][]byte{frame}, len(frame))
		if ref == nil {
			break
		}
		placed++
		release(binary.LittleEndian.Uint64(ref[8:]))
	}
	if placed != shmSlots-1 {
		t.Fatalf("%d frames placed past the kept one, want %d", placed, shmSlots-1)
	}
	if !bytes.Equal(a.mem[keptOff:keptOff+len(kept)], kept) {
		t.Fatal("the kept frame was written over")
	}
	release(0)
	if placeBufs(a, [][]byte{frame}, len(frame)) == nil {
		t.Fatal("no frame placed once the kept one was released")
	}
}

// TestShmAreaCloseFrees: closing an area gives back the memory of every
// frame but those the client still holds, which it may keep for long.
func TestShmAreaCloseFrees(t *testing.T) {
	const size = 8 << 20
	a, err := newShmArea(size)
	if err != nil {
		t.Fatal(err)
	}
	frame := bytes.Repeat([]byte{7}, 256<<10)
	var kept uint64
	for i := range 20 {
		ref := placeBufs(a, [][]byte{frame}, len(frame))
		if ref == nil {
			t.Fatalf("frame %d not placed", i)
		}
		seq := binary.LittleEndian.Uint64(ref[8:])
		if i == 10 {
			kept = seq // the client keeps this one
			continue
		}
		binary.LittleEndian.PutUint64(a.mem[shmReleased+8*(seq%shmSlots):], seq+1)
	}
	// The client's descriptor, as the client has it.
	fd, err := unix.Dup(a.fd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	allocatedBytes := func() int64 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	if b := allocatedBytes(); b < int64(len(frame)) {
		t.Fatalf("%d bytes allocated before close", b)
	}
	a.close()
	// The control page and the kept frame remain.
	if b := allocatedBytes(); b > shmControl+int64(len(frame))+shmAlign {
		t.Fatalf("%d bytes still allocated after close, the kept frame (seq %d) is %d", b, kept, len(frame))
	}
}

// placeBufs is place with the frame's bytes given, for tests.
func placeBufs(a *shmArea, bufs [][]byte, n int) []byte {
	ref, err := a.place(bufs, n, nil)
	if err != nil {
		panic(err)
	}
	return ref
}

// TestShmAreaFill places frames that a fill function writes: a failing
// one is not placed (the next frame takes its place and its sequence
// number), and the bytes written are the frame's.
func TestShmAreaFill(t *testing.T) {
	a, err := newShmArea(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	n := shmMinFrame + 100
	ref, err := a.place(nil, n, func(dst []byte) error {
		if len(dst) != n || cap(dst) != n {
			t.Fatalf("fill given %d bytes (cap %d), want %d", len(dst), cap(dst), n)
		}
		dst[0] = 0xAB
		return errTestFill
	})
	if ref != nil || err != errTestFill {
		t.Fatalf("failed fill: ref %x, err %v", ref, err)
	}
	ref, err = a.place(nil, n, func(dst []byte) error {
		for i := range dst {
			dst[i] = byte(i)
		}
		return nil
	})
	if ref == nil || err != nil {
		t.Fatalf("fill: ref %x, err %v", ref, err)
	}
	seq := binary.LittleEndian.Uint64(ref[8:])
	off := int(binary.LittleEndian.Uint64(ref[16:]))
	if seq != 0 || len(a.held) != 1 {
		t.Fatalf("after a failed fill: seq %d, %d frames held", seq, len(a.held))
	}
	for i := range n {
		if a.mem[off+i] != byte(i) {
			t.Fatalf("byte %d of the frame is %d", i, a.mem[off+i])
		}
	}
}

var errTestFill = errors.New("fill failed")

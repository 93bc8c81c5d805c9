package exec

import (
	"errors"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func wantCode(t *testing.T, err error, code pgerror.Code) {
	t.Helper()
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("got %v, want SQLSTATE %s", err, code)
	}
}

// TestMemAccountChunks: accounts reserve in chunks, up the chain of
// monitors, and give everything back when closed.
func TestMemAccountChunks(t *testing.T) {
	root := NewMemMonitor("server", 64<<20)
	sess := root.Child("session")
	a := sess.NewAccount("a test")
	for range 1000 {
		if err := a.Grow(100); err != nil {
			t.Fatal(err)
		}
	}
	if a.Used() != 100000 || root.Used() != memChunk || sess.Used() != memChunk {
		t.Fatalf("used %d, session %d, root %d; want 100000 in one chunk", a.Used(), sess.Used(), root.Used())
	}
	if err := a.Resize(10 << 20); err != nil {
		t.Fatal(err)
	}
	if root.Used() < 10<<20 || root.Used() > 12<<20 {
		t.Fatalf("root holds %d for 10MB", root.Used())
	}
	a.Shrink(10<<20 - 10)
	if root.Used() > 3*memChunk {
		t.Fatalf("root holds %d after shrinking to 10 bytes", root.Used())
	}
	a.Close()
	if root.Used() != 0 || sess.Used() != 0 {
		t.Fatalf("after Close: root %d, session %d", root.Used(), sess.Used())
	}
}

// TestMemAccountLimit: a reservation past the root's limit fails with
// 53200 and reserves nothing; what others hold counts.
func TestMemAccountLimit(t *testing.T) {
	root := NewMemMonitor("server", 8<<20)
	s1, s2 := root.Child("session"), root.Child("session")
	a, b := s1.NewAccount("a sort"), s2.NewAccount("a hash aggregate")
	if err := a.Grow(5 << 20); err != nil {
		t.Fatal(err)
	}
	err := b.Grow(4 << 20)
	wantCode(t, err, pgerror.OutOfMemory)
	var pe *pgerror.Error
	errors.As(err, &pe)
	if pe.Message != "out of memory" || pe.Detail == "" {
		t.Fatalf("message %q detail %q", pe.Message, pe.Detail)
	}
	t.Log(pe.Detail)
	if b.Used() != 0 || s2.Used() != 0 || root.Used() != 5<<20 {
		t.Fatalf("failed reservation kept bytes: b %d, s2 %d, root %d", b.Used(), s2.Used(), root.Used())
	}
	// A request that fits exactly, though its chunk would not, succeeds.
	if err := b.Grow(3 << 20); err != nil {
		t.Fatal(err)
	}
	// Stopping a session gives back what its accounts never did.
	s1.Stop()
	if root.Used() != 3<<20 {
		t.Fatalf("root %d after stopping the first session", root.Used())
	}
	a.Close() // after Stop: nothing more to give back
	if root.Used() != 3<<20 {
		t.Fatalf("root %d after closing a stopped session's account", root.Used())
	}
	b.Close()
	if root.Used() != 0 {
		t.Fatalf("root %d at the end", root.Used())
	}
	// Without a monitor an account counts without a limit.
	var none *MemMonitor
	c := none.NewAccount("x")
	if err := c.Grow(1 << 40); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1GB", 512 << 20: "512MB", 3 << 10: "3kB", 1000: "1000B", 1536 << 20: "1536MB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

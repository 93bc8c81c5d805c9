package types

import (
	"math"
	"testing"
)

// TestMemorySettingKB reads memory settings as PostgreSQL does, in kB.
func TestMemorySettingKB(t *testing.T) {
	for v, want := range map[string]int64{"4MB": 4096, "65536": 65536, " 1GB ": 1 << 20, "2kB": 2, "-5": -5, "99999999999999TB": math.MaxInt64} {
		if got, ok := MemorySettingKB(v); !ok || got != want {
			t.Errorf("%q: %d, %v; want %d", v, got, ok, want)
		}
	}
	for _, v := range []string{"8XB", "", "MB", "1.5GB"} {
		if got, ok := MemorySettingKB(v); ok {
			t.Errorf("%q: %d, want an error", v, got)
		}
	}
}

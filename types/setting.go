package types

import (
	"math"
	"strconv"
	"strings"
)

// MemorySettingKB reads a memory setting's value ("4MB", "65536", "1GB")
// in kB, the unit of a number without one, as PostgreSQL does; ok is false
// for what is not a number with a known unit. The range is the caller's to
// check.
func MemorySettingKB(v string) (int64, bool) {
	t := strings.TrimSpace(v)
	num := strings.TrimRight(t, "kMGTB")
	unit := strings.TrimSpace(t[len(num):])
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	mult := map[string]int64{"": 1, "kB": 1, "MB": 1 << 10, "GB": 1 << 20, "TB": 1 << 30}[unit]
	if err != nil || mult == 0 {
		return 0, false
	}
	// Out of int64's range: the nearest end, outside any setting's range.
	if n > math.MaxInt64/mult {
		return math.MaxInt64, true
	}
	if n < math.MinInt64/mult {
		return math.MinInt64, true
	}
	return n * mult, true
}

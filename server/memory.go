package server

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// DefaultMemoryLimit is the memory limit when Options leave it 0: three
// quarters of the machine's physical memory, or of the cgroup's limit
// when one is set and smaller (a container's), rounded down to a MB.
func DefaultMemoryLimit() int64 {
	limit := physicalMemory()
	if c := cgroupLimit(); c > 0 && (limit == 0 || c < limit) {
		limit = c
	}
	if limit == 0 {
		limit = 4 << 30 // unknown: a modest machine's
	}
	return limit / 4 * 3 >> 20 << 20
}

// physicalMemory reads MemTotal from /proc/meminfo; 0 when unknown.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fs[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupLimit reads the cgroup v2 memory limit of the process (or v1's);
// 0 when none is set.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		// v1 reports "no limit" as a huge number.
		if err == nil && n > 0 && n < 1<<60 {
			return n
		}
	}
	return 0
}

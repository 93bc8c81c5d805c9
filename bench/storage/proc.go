package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTicks = 100

// procTimes reads a process's stat: parent pid, and its CPU time, of
// itself and of its waited-for children.
func procTimes(pid int) (ppid int, self, children time.Duration, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return 0, 0, 0, false
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(f[k-3], 10, 64); return n }
	tick := time.Second / clockTicks
	return int(num(4)), time.Duration(num(14)+num(15)) * tick, time.Duration(num(16)+num(17)) * tick, true
}

// treeCPU returns the CPU time used by process pid, its live children and
// the children it has waited for (PostgreSQL's postmaster and its
// backends, or deeplaked alone). 0 if pid is 0.
func treeCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	_, self, waited, ok := procTimes(pid)
	if !ok {
		return 0
	}
	total := self + waited
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if ppid, t, _, ok := procTimes(child); ok && ppid == pid {
			total += t
		}
	}
	return total
}

// selfCPU returns this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS returns a process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// busyCPU returns the CPU time all CPUs spent busy since boot (user,
// nice, system, irq, softirq; not idle, iowait or steal), from /proc/stat.
func busyCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, k := range []int{1, 2, 3, 6, 7} {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / clockTicks)
}

package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// setMemoryLimit gives the Go runtime a soft memory limit of three
// quarters of the machine's memory (MemTotal in /proc/meminfo) unless
// GOMEMLIMIT sets one: a long benchmark that copies its dataset per client
// or per split then collects its garbage before the heap doubles past what
// the machine has, instead of being killed by the kernel. It does nothing
// where /proc/meminfo is absent or unreadable.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total, ok := memTotal("/proc/meminfo"); ok {
		debug.SetMemoryLimit(total / 4 * 3)
	}
}

// memTotal reads MemTotal, in bytes, from a meminfo file.
func memTotal(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 || kb > 1<<40 {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}

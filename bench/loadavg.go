package bench

import (
	"os"
	"strings"
)

// loadAvg is the first three fields of /proc/loadavg ("" where absent), so a
// reader of a benchmark knows how busy the machine was.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

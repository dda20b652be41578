package bench

import (
	"os"
	"strings"
)

// LoadAvg is the first three fields of /proc/loadavg ("" where absent), so a
// reader of a benchmark knows how busy the machine was.
func LoadAvg() string {
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

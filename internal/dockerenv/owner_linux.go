package dockerenv

import (
	"os"
	"strconv"
	"strings"
)

// processStart is a process's start time in clock ticks since boot (field
// 22 of /proc/PID/stat), or "" when it cannot be read.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// parseOwner splits "PID/start".
func parseOwner(label string) (pid int, start string, ok bool) {
	p, s, _ := strings.Cut(label, "/")
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, s, true
}

//go:build unix

package checkers_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used. The
// benchmarks report it besides wall time because the machines they run on
// are shared: CPU time is what the work cost, whoever else was running.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !unix

package checkers_test

import "time"

// cpuTime is not measured on this platform; cpu-ns/event then reads 0.
func cpuTime() time.Duration { return 0 }

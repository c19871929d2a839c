package history_test

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// BenchmarkLoad measures history.Load alone on a generated history held in
// memory: the loader's share of `idemchaos check`.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{100_000} {
		data := histgen.Generate(histgen.Default(n))
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := history.Load(bytes.NewReader(data), history.LoadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/event")
		})
	}
}

// cpuTime is the CPU time (user + system) this process has used: on a
// shared machine, what the work cost whoever else was running.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

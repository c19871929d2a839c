package checkers_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// benchSizes shows that the cost per event stays flat as histories grow.
var benchSizes = []int{10_000, 100_000, 1_000_000}

var (
	benchMu   sync.Mutex
	benchSize int
	benchFile string
	benchLen  int64
)

// benchHistory writes a clean history of about n events to a file and
// returns its path: 10% duplicates, 5% indeterminate, 3 tenants, JSON bodies
// and headers. The benchmarks stream it from the file, as `idemchaos check`
// does, so the input never sits on the heap being measured.
func benchHistory(b *testing.B, n int) (string, int64) {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchSize != n {
		data := histgen.Generate(histgen.Default(n))
		f, err := os.CreateTemp("", "idemchaos-bench-*.jsonl")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if benchFile != "" {
			_ = os.Remove(benchFile)
		}
		benchFile, benchSize, benchLen = f.Name(), n, int64(len(data))
		runtime.GC()
	}
	return benchFile, benchLen
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFile != "" {
		_ = os.Remove(benchFile)
	}
	os.Exit(code)
}

func openBench(b *testing.B, name string) *os.File {
	b.Helper()
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkDecode measures the streaming decoder alone: history.Reader over
// the bytes, every event decoded, nothing kept.
func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			name, size := benchHistory(b, n)
			events := 0
			b.SetBytes(size)
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				f := openBench(b, name)
				r := history.NewReader(f)
				var e history.Event
				events = 0
				for {
					err := r.Next(&e)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
				f.Close()
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(events), "cpu-ns/event")
		})
	}
}

// BenchmarkLoadCheck measures what `idemchaos check` does: history.Load and
// all seven checkers. peak-heap-MiB is the largest HeapInuse sampled at the
// two high-water marks (the end of Load, before any GC, and the end of the
// checks), less the heap in use before Load; live-MiB is the heap the loaded
// history holds after a GC.
func BenchmarkLoadCheck(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			name, size := benchHistory(b, n)
			c := checkers.Default()
			var events int
			var peak, loadPeak uint64
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			b.SetBytes(size)
			b.ResetTimer()
			var cpu time.Duration
			for b.Loop() {
				// Start each run from a collected heap, as a fresh
				// `idemchaos check` would: otherwise the previous run's
				// garbage and GC goal inflate this run's peak.
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				cpu0 := cpuTime()
				f := openBench(b, name)
				h, err := history.Load(f, history.LoadOptions{})
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - cpu0
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				loadPeak = max(loadPeak, ms.HeapInuse)
				b.StartTimer()
				cpu0 = cpuTime()
				r := c.Check(h, h.Effects)
				b.StopTimer()
				cpu += cpuTime() - cpu0
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				if r.Verdict != checkers.Pass {
					b.Fatalf("a clean generated history must pass: %s %v", r.Verdict, r.Failures())
				}
				events = h.Events
				runtime.KeepAlive(h)
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(events), "cpu-ns/event")
			b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(loadPeak-min(loadPeak, base))/(1<<20), "load-peak-MiB")
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			f := openBench(b, name)
			h, _ := history.Load(f, history.LoadOptions{})
			f.Close()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc-min(ms.HeapAlloc, before))/(1<<20), "live-MiB")
			runtime.KeepAlive(h)
		})
	}
}

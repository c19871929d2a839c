package reference_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// BenchmarkService_ReplayCPU measures what a replay costs the service's
// own process: CPU time (user + system, getrusage) and allocations per
// replay while wrk (a separate process, as in `idemchaos bench --only
// reference`) replays 1000 stored records of one tenant at concurrency 16
// for 3 slices of 3 s. CPU per replay is steadier under a shared machine's
// load than the replay rate, though it still grows with it; compare
// binaries side by side. It runs once whatever b.N is:
//
//	go test ./reference/ -run '^$' -bench ReplayCPU -benchtime 1x
func BenchmarkService_ReplayCPU(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Fatal("this benchmark loads the service with wrk: ", err)
	}
	dsn := pgtest.Database(b)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- reference.Serve(ctx, reference.Config{DSN: dsn, Addr: "127.0.0.1:0", MaxConns: 16,
			Ready: func(a string) { ready <- a }}, io.Discard)
	}()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr + "/v1/orders"
	case err := <-done:
		b.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	const body = `{"sku":"A-100","qty":2,"amount":500}`
	for i := 1; i <= 1000; i++ {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok-t1")
		req.Header.Set("Idempotency-Key", "rep-"+strconv.Itoa(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("creating rep-%d: %s", i, resp.Status)
		}
	}
	script := filepath.Join(b.TempDir(), "replay.lua")
	if err := os.WriteFile(script, []byte(`wrk.method = "POST"
wrk.body = '`+body+`'
hdr = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer tok-t1"}
request = function()
  hdr["Idempotency-Key"] = "rep-" .. math.random(1, 1000)
  return wrk.format(nil, nil, hdr)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("REPLAYCPU requests=%d duration_us=%d errors=%d\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout))
end
`), 0o644); err != nil {
		b.Fatal(err)
	}
	summary := regexp.MustCompile(`REPLAYCPU requests=(\d+) duration_us=(\d+) errors=(\d+)`)
	slice := func(d time.Duration) (n, secs, cpuSecs float64, mallocs uint64) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := processCPU()
		out, err := exec.Command(wrk, "-t", "2", "-c", "16", "-d", fmt.Sprintf("%.0fs", d.Seconds()), "-s", script, url).CombinedOutput()
		c1 := processCPU()
		runtime.ReadMemStats(&m1)
		m := summary.FindSubmatch(out)
		if err != nil || m == nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		if string(m[3]) != "0" {
			b.Fatalf("wrk counted %s errors", m[3])
		}
		n, _ = strconv.ParseFloat(string(m[1]), 64)
		us, _ := strconv.ParseFloat(string(m[2]), 64)
		return n, us / 1e6, (c1 - c0).Seconds(), m1.Mallocs - m0.Mallocs
	}
	slice(time.Second) // warm-up: connections, prepared statements
	var n, secs, cpuSecs float64
	var mallocs uint64
	for range 3 {
		sn, ss, sc, sm := slice(3 * time.Second)
		b.Logf("slice: %.0f replays/s, %.1f µs CPU per replay", sn/ss, sc/sn*1e6)
		n, secs, cpuSecs, mallocs = n+sn, secs+ss, cpuSecs+sc, mallocs+sm
	}
	b.ReportMetric(n/secs, "replays/s")
	b.ReportMetric(cpuSecs/n*1e6, "cpu_us/replay")
	b.ReportMetric(float64(mallocs)/n, "allocs/replay")
}

// processCPU is this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

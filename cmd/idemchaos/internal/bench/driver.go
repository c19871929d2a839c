package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/internal/refbench"
)

// DriverResult is the harness-speed section: the traffic driver against wrk
// and against vegeta (the Go peer, as a library) on the same trivial
// in-process handler at the same concurrency, each direct and through the
// in-process Toxiproxy. Rates are requests/s, one sample per round; the
// workloads alternate within a round.
type DriverResult struct {
	Concurrency int
	Slice       time.Duration
	// WrkThreads is wrk's -t; WrkMissing says wrk was not installed, so
	// its rows are empty.
	WrkThreads int
	WrkMissing bool
	// Wrk and WrkProxy are wrk direct and through the proxy; Driver and
	// DriverProxy the driver, recording every attempt to a history file.
	Wrk, WrkProxy, Driver, DriverProxy Summary
	// Vegeta and VegetaProxy are vegeta direct and through the proxy.
	Vegeta, VegetaProxy Summary
	// HistoryBytesPerRequest is the history the driver wrote per request.
	HistoryBytesPerRequest float64
	// The CPU each workload cost per answered request, in microseconds of
	// user+system time: this whole process (handler, proxy, and the driver
	// or vegeta) plus, for wrk, wrk's own. Unlike the rates, these do not
	// depend on how much of a shared machine each workload was given.
	WrkCPU, WrkProxyCPU, DriverCPU, DriverProxyCPU, VegetaCPU, VegetaProxyCPU Summary
	// ServerCPU and ServerProxyCPU are this process's CPU per request while
	// wrk (another process) was the client: the handler's cost, and the
	// proxy's. Every in-process client pays it on top of its own, so it
	// bounds the ratio any in-process client can reach over vegeta.
	ServerCPU, ServerProxyCPU Summary
}

// cpuTime is the user+system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perRequest is CPU time in microseconds per request.
func perRequest(cpu time.Duration, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / n
}

var (
	wrkRate  = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkCount = regexp.MustCompile(`([0-9]+) requests in `)
)

func (b *bench) driver(ctx context.Context) error {
	// Without wrk the section still compares the driver with vegeta, and
	// says that wrk was absent rather than failing.
	wrk := binary(b.opts.Wrk, "wrk")
	addr, stop, err := refbench.StartHTTPFloor()
	if err != nil {
		return err
	}
	defer stop()
	px := proxy.NewInProcess()
	defer px.Close(context.WithoutCancel(ctx))
	paddr, err := px.CreateProxy(ctx, "bench-http", "", addr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "idemchaos-bench-driver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "post.lua")
	// The same request the driver sends: POST, JSON body, bearer token,
	// idempotency key. The key is fixed: varying it costs wrk a Lua call per
	// request, and the handler does not read it.
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"+
		"wrk.headers[\"Authorization\"] = \"Bearer tok-t1\"\nwrk.headers[\"Idempotency-Key\"] = \"bench-key-000001\"\n", refbench.Body)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		return err
	}
	threads := min(max(2, b.rep.Machine.Cores), b.opts.Concurrency)
	res := &DriverResult{Concurrency: b.opts.Concurrency, Slice: b.opts.Slice, WrkThreads: threads, WrkMissing: wrk == ""}
	b.rep.Driver = res
	intents := benchIntents(int(b.opts.Slice.Seconds()*80_000) + 10_000)

	// Each workload returns its rate and its CPU per request.
	var srvD, srvP []float64
	runWrk := func(target string) (float64, float64, error) {
		secs := max(1, int(b.opts.Slice.Round(time.Second).Seconds()))
		cmd := exec.CommandContext(ctx, wrk, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(b.opts.Concurrency),
			"-d", strconv.Itoa(secs)+"s", "-s", script, "http://"+target+"/v1/orders")
		cpu0 := cpuTime()
		out, err := cmd.CombinedOutput()
		cpu := cpuTime() - cpu0
		if err != nil {
			return 0, 0, fmt.Errorf("wrk: %w\n%s", err, out)
		}
		server := cpu
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
			return 0, 0, fmt.Errorf("wrk saw errors:\n%s", out)
		}
		m, c := wrkRate.FindSubmatch(out), wrkCount.FindSubmatch(out)
		if m == nil || c == nil {
			return 0, 0, fmt.Errorf("wrk: no Requests/sec or request count in\n%s", out)
		}
		n, err := strconv.ParseFloat(string(c[1]), 64)
		if err != nil {
			return 0, 0, err
		}
		r, err := strconv.ParseFloat(string(m[1]), 64)
		if target == addr {
			srvD = append(srvD, perRequest(server, n))
		} else {
			srvP = append(srvP, perRequest(server, n))
		}
		return r, perRequest(cpu, n), err
	}
	var histBytes, histReqs float64
	runDriver := func(target string) (float64, float64, error) {
		path := filepath.Join(dir, "driver.jsonl")
		f, err := os.Create(path)
		if err != nil {
			return 0, 0, err
		}
		defer os.Remove(path)
		defer f.Close()
		rec, err := driver.NewRecorder(history.NewWriter(f), "bench-driver", 1)
		if err != nil {
			return 0, 0, err
		}
		cpu0 := cpuTime()
		st, err := driver.Run(ctx, driver.Config{BaseURL: "http://" + target, Tokens: map[string]string{"t1": "tok-t1"},
			Headers: map[string]string{"Content-Type": "application/json"}, Concurrency: b.opts.Concurrency,
			MaxRequests: len(intents), Deadline: b.opts.Slice, Timeout: 5 * time.Second, Recorder: rec, Seed: 1}, intents)
		cpu := cpuTime() - cpu0
		if err != nil {
			return 0, 0, err
		}
		if st.Fail > 0 || (st.Info > int64(b.opts.Concurrency)) {
			return 0, 0, fmt.Errorf("driver: %d fail, %d info of %d requests", st.Fail, st.Info, st.Requests)
		}
		if st.Requests >= int64(len(intents)) {
			return 0, 0, fmt.Errorf("driver: ran out of intents (%d) before the deadline", len(intents))
		}
		if fi, err := f.Stat(); err == nil {
			histBytes += float64(fi.Size())
			histReqs += float64(st.Requests)
		}
		return float64(st.OK) / st.Elapsed.Seconds(), perRequest(cpu, float64(st.OK)), nil
	}
	// Warm-up: connections, the proxy's first links, the page cache.
	if _, _, err := runDriver(paddr); err != nil {
		return err
	}
	runVeg := func(target string) (float64, float64, error) {
		cpu0 := cpuTime()
		rate, n, err := runVegeta(target, b.opts.Concurrency, b.opts.Slice, uint64(len(intents)))
		return rate, perRequest(cpuTime()-cpu0, float64(n)), err
	}
	var wrkD, wrkP, drvD, drvP, vegD, vegP []float64
	var wrkDC, wrkPC, drvDC, drvPC, vegDC, vegPC []float64
	for round := range b.opts.Repeats {
		for _, w := range []struct {
			name      string
			run       func(string) (float64, float64, error)
			target    string
			into, cpu *[]float64
		}{
			{"wrk direct", runWrk, addr, &wrkD, &wrkDC},
			{"driver direct", runDriver, addr, &drvD, &drvDC},
			{"vegeta direct", runVeg, addr, &vegD, &vegDC},
			{"vegeta via proxy", runVeg, paddr, &vegP, &vegPC},
			{"driver via proxy", runDriver, paddr, &drvP, &drvPC},
			{"wrk via proxy", runWrk, paddr, &wrkP, &wrkPC},
		} {
			if wrk == "" && w.into == &wrkD || wrk == "" && w.into == &wrkP {
				continue
			}
			rate, cpu, err := w.run(w.target)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			*w.into, *w.cpu = append(*w.into, rate), append(*w.cpu, cpu)
			b.logf("driver round %d/%d: %-16s %8.0f req/s %6.1f µs CPU/req", round+1, b.opts.Repeats, w.name, rate, cpu)
		}
		res.Wrk, res.WrkProxy, res.Driver, res.DriverProxy = Summarize(wrkD), Summarize(wrkP), Summarize(drvD), Summarize(drvP)
		res.Vegeta, res.VegetaProxy = Summarize(vegD), Summarize(vegP)
		res.WrkCPU, res.WrkProxyCPU, res.DriverCPU, res.DriverProxyCPU = Summarize(wrkDC), Summarize(wrkPC), Summarize(drvDC), Summarize(drvPC)
		res.VegetaCPU, res.VegetaProxyCPU = Summarize(vegDC), Summarize(vegPC)
		res.ServerCPU, res.ServerProxyCPU = Summarize(srvD), Summarize(srvP)
		if histReqs > 0 {
			res.HistoryBytesPerRequest = histBytes / histReqs
		}
	}
	return nil
}

// benchIntents are n single-attempt intents with distinct keys, all due at
// once: the driver sends them as fast as its concurrency allows.
func benchIntents(n int) []driver.Intent {
	body := []byte(refbench.Body)
	out := make([]driver.Intent, n)
	for i := range out {
		id := "i" + strconv.Itoa(i+1)
		out[i] = driver.Intent{ID: id, Tenant: "t1", Key: "bench-" + id, Method: "POST", Path: "/v1/orders", Body: body}
	}
	return out
}

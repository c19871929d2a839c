package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Issue #24's targets (its Performance paragraph).
const (
	targetClientPath = 1.5 // the client proxy's cost per attempt over Toxiproxy's
	targetClientRate = 1e6 // events/s checking a client history
)

// ClientsResult is the clients section (issue #24), from the module's own
// benchmarks, run with the go command in a checkout: one `go test` run of
// each a round, so that each round's three paths run side by side.
type ClientsResult struct {
	Rounds int
	// Direct, Proxied and Toxiproxy are BenchmarkClientPath's (harness)
	// median µs per attempt, one request down each path in turn: the same
	// POST straight to the upstream, through an intent's listener of the
	// client proxy (recorded), and through the in-process Toxiproxy alone.
	// Ratio is each round's (Proxied − Direct) / (Toxiproxy − Direct):
	// what the proxy adds over what Toxiproxy adds.
	Direct, Proxied, Toxiproxy, Ratio Summary
	// CheckRate is BenchmarkLoadCheckClient's (checkers) events/s at 1M
	// events — history.Load and the ten client invariants, as `idemchaos
	// check` runs them — and CheckCPU its CPU-ns per event.
	CheckEvents         int
	CheckRate, CheckCPU Summary
	// CurlThrough and CurlStraight are the seconds of the curl client's
	// 200 intents through idemchaos and straight at a reference (see
	// curlRound), CurlRatio each round's quotient.
	CurlThrough, CurlStraight, CurlRatio Summary
	// Corpus is the client corpus × CorpusSeeds (see clientCorpus).
	Corpus      []ClientCorpusRow
	CorpusSeeds int
}

var (
	clientPathLine = regexp.MustCompile(`(?m)^BenchmarkClientPath/side-by-side(?:-\d+)?\s.*$`)
	clientPathMet  = regexp.MustCompile(`([0-9.e+-]+) (direct-us/op|proxied-us/op|toxiproxy-us/op|ratio)\b`)
	checkRateLine  = regexp.MustCompile(`(?m)^BenchmarkLoadCheckClient/events=(\d+)(?:-\d+)?\s.*?\s([0-9.e+]+) events/s`)
	checkCPULine   = regexp.MustCompile(`(?m)^BenchmarkLoadCheckClient/events=\d+(?:-\d+)?\s.*?\s([0-9.e+]+) cpu-ns/event`)
)

func (b *bench) clients(ctx context.Context) error {
	root, err := foreign.ModuleRoot(ctx)
	if err != nil {
		return fmt.Errorf("the clients section runs the module's benchmarks from a checkout: %w", err)
	}
	res := &ClientsResult{}
	b.rep.Clients = res
	r, closeRunner, err := harness.Open(ctx, harness.OpenOptions{})
	if err != nil {
		return err
	}
	defer closeRunner(context.WithoutCancel(ctx))
	r.HistoryDir = b.opts.HistoryDir // a wrong verdict's history is named in the report
	local, err := env.StartLocal(ctx, env.LocalConfig{})
	if err != nil {
		return err
	}
	defer local.Close(context.WithoutCancel(ctx))
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	straightURL, err := serveReference(sctx, local)
	if err != nil {
		return err
	}
	var direct, proxied, toxi, ratios, rates, cpus, curlThrough, curlStraight, curlRatios []float64
	for i := range b.opts.Repeats {
		out, err := goBench(ctx, root, "./harness/", "^BenchmarkClientPath$/^side-by-side$", "2s")
		if err != nil {
			return err
		}
		us, err := clientPathRound(out)
		if err != nil {
			return err
		}
		direct, proxied, toxi, ratios = append(direct, us[0]), append(proxied, us[1]), append(toxi, us[2]), append(ratios, us[3])
		if out, err = goBench(ctx, root, "./checkers/", "^BenchmarkLoadCheckClient$/^events=1000000$", "3x"); err != nil {
			return err
		}
		m, c := checkRateLine.FindStringSubmatch(out), checkCPULine.FindStringSubmatch(out)
		if m == nil || c == nil {
			return fmt.Errorf("BenchmarkLoadCheckClient printed no events/s and cpu-ns/event:\n%s", clip(out, 2000))
		}
		res.CheckEvents, _ = strconv.Atoi(m[1])
		rt, _ := strconv.ParseFloat(m[2], 64)
		cpu, _ := strconv.ParseFloat(c[1], 64)
		rates, cpus = append(rates, rt), append(cpus, cpu)
		through, straight, err := curlRound(ctx, root, r, straightURL)
		if err != nil {
			return err
		}
		curlThrough, curlStraight, curlRatios = append(curlThrough, through), append(curlStraight, straight), append(curlRatios, through/straight)
		res.CurlThrough, res.CurlStraight, res.CurlRatio = Summarize(curlThrough), Summarize(curlStraight), Summarize(curlRatios)
		res.Rounds = i + 1
		res.Direct, res.Proxied, res.Toxiproxy, res.Ratio = Summarize(direct), Summarize(proxied), Summarize(toxi), Summarize(ratios)
		res.CheckRate, res.CheckCPU = Summarize(rates), Summarize(cpus)
		b.logf("clients %d/%d: direct %.1f µs, proxied %.1f µs, toxiproxy %.1f µs (ratio %.2f×); check %s events/s; curl × %d: %.2f s through, %.2f s straight (%.2f×)",
			i+1, b.opts.Repeats, us[0], us[1], us[2], us[3], rate(rt), curlIntents, through, straight, through/straight)
	}
	res.CorpusSeeds = b.opts.ClientSeeds
	res.Corpus, err = clientCorpus(ctx, b, root, r, b.opts.ClientSeeds)
	return err
}

// goBench runs one benchmark of pkg with the go command from root and
// returns its output.
func goBench(ctx context.Context, root, pkg, bench, benchtime string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "-count", "1", pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go test -bench %s %s: %w:\n%s", bench, pkg, err, clip(string(out), 2000))
	}
	return string(out), nil
}

// clientPathRound reads BenchmarkClientPath/side-by-side's metrics: the
// median µs per attempt direct, proxied and through Toxiproxy, and the
// ratio.
func clientPathRound(out string) ([4]float64, error) {
	var got [4]float64
	seen := 0
	for _, m := range clientPathMet.FindAllStringSubmatch(clientPathLine.FindString(out), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		got[map[string]int{"direct-us/op": 0, "proxied-us/op": 1, "toxiproxy-us/op": 2, "ratio": 3}[m[2]]] = v
		seen++
	}
	if seen != 4 {
		return got, fmt.Errorf("BenchmarkClientPath/side-by-side printed not all of direct-us/op, proxied-us/op, toxiproxy-us/op and ratio:\n%s", clip(out, 2000))
	}
	return got, nil
}

func (r *Report) clientsMD(p printer) {
	c := r.Clients
	if c == nil {
		return
	}
	p("## The caller's path (issue 24)")
	p("")
	p("The module's own benchmarks, one `go test` run of each a round (%d rounds), so that each round's paths run side by side. "+
		"`BenchmarkClientPath/side-by-side` (harness) sends the same POST straight to an upstream, through an intent's listener of the "+
		"client proxy (the attempt recorded), and through the in-process Toxiproxy alone, one request down each in turn for 2 s, and "+
		"takes each path's median; what the proxy adds is set against what Toxiproxy adds, round by round. `BenchmarkLoadCheckClient` (checkers) loads a clean client history of %s events and runs the ten client "+
		"invariants, as `idemchaos check` does.", c.Rounds, count(c.CheckEvents))
	p("")
	p("| figure | wanted | median | min | max | |")
	p("|---|---|---|---|---|---|")
	p("| attempt, direct | | %.1f µs | %.1f µs | %.1f µs | |", c.Direct.Median, c.Direct.Min, c.Direct.Max)
	p("| attempt through the client proxy | | %.1f µs | %.1f µs | %.1f µs | |", c.Proxied.Median, c.Proxied.Min, c.Proxied.Max)
	p("| attempt through Toxiproxy | | %.1f µs | %.1f µs | %.1f µs | |", c.Toxiproxy.Median, c.Toxiproxy.Min, c.Toxiproxy.Max)
	p("| what the proxy adds / what Toxiproxy adds | ≤ %.1f× | %.2f× | %.2f× | %.2f× | %s |", targetClientPath, c.Ratio.Median, c.Ratio.Min, c.Ratio.Max,
		metIf(c.Ratio.Median <= targetClientPath, fmt.Sprintf("%.2f× over", c.Ratio.Median-targetClientPath)))
	p("| check of a client history, %s events | ≥ %s events/s | %s | %s | %s | %s |", count(c.CheckEvents), rate(targetClientRate),
		rate(c.CheckRate.Median), rate(c.CheckRate.Min), rate(c.CheckRate.Max),
		metIf(c.CheckRate.Median >= targetClientRate, fmt.Sprintf("%.0f%% short", (1-c.CheckRate.Median/targetClientRate)*100)))
	p("| its CPU per event | | %.0f ns | %.0f ns | %.0f ns | |", c.CheckCPU.Median, c.CheckCPU.Min, c.CheckCPU.Max)
	p("| %d intents of the curl client at concurrency %d, no fault: through idemchaos | | %.2f s | %.2f s | %.2f s | |", curlIntents, curlConcurrency,
		c.CurlThrough.Median, c.CurlThrough.Min, c.CurlThrough.Max)
	p("| the same invocations straight at a reference | | %.2f s | %.2f s | %.2f s | |", c.CurlStraight.Median, c.CurlStraight.Min, c.CurlStraight.Max)
	p("| through / straight | ≤ %.0f× | %.2f× | %.2f× | %.2f× | %s |", targetCurl, c.CurlRatio.Median, c.CurlRatio.Min, c.CurlRatio.Max,
		metIf(c.CurlRatio.Median <= targetCurl, fmt.Sprintf("%.2f× over", c.CurlRatio.Median-targetCurl)))
	p("")
	p("The curl rows: `examples/clients/curl/create-order.sh` (a key minted once, `curl --retry 3`) run once per intent. Through idemchaos, "+
		"the client step of a run on the embedded environment (the bundled reference behind the per-intent fault proxy, every attempt "+
		"recorded), timed from its first invocation's start to its last one's end; straight, the same %d invocations of the script, "+
		"%d at a time, with `IDEMCHAOS_URL` at a reference served in-process on a database of its own; one of each a round.", curlIntents, curlConcurrency)
	p("")
	clientCorpusMD(p, c.Corpus, c.CorpusSeeds)
}

// curlIntents and curlConcurrency are issue #24's curl run: 200 intents,
// 8 at a time, no fault.
const (
	curlIntents     = 200
	curlConcurrency = 8
	targetCurl      = 2.0 // through idemchaos over straight at the upstream
)

// curlScenario is that run as a client scenario: the corpus's curl client
// (examples/clients/curl) against the bundled reference.
const curlScenario = `name: curl-200
client:
  command: [SCRIPT]
  intents: 200
  concurrency: 8
  timeout: 60s
endpoint:
  body: '{"sku":"A-100","qty":1,"amount":100}'
  tokens: {t1: tok-t1}
steps:
  - name: no-fault
`

// curlRound times the curl client's 200 intents once each way: the client
// step of a run on the embedded environment (the step's span: the first
// invocation's start to the last one's end, every attempt through its
// intent's listener of the fault proxy and recorded), and the same 200
// invocations of the script, 8 at a time, straight at a reference served
// on a database of its own. It returns the seconds of each.
func curlRound(ctx context.Context, root string, r *harness.Runner, direct string) (through, straight float64, err error) {
	script := filepath.Join(root, "examples", "clients", "curl", "create-order.sh")
	s, err := scenarios.Parse("curl-200.yaml", []byte(strings.Replace(curlScenario, "SCRIPT", strconv.Quote(script), 1)))
	if err != nil {
		return 0, 0, err
	}
	o, err := r.Run(ctx, s, harness.RunOptions{Seed: 1})
	if err != nil {
		return 0, 0, fmt.Errorf("the curl client's run: %w", err)
	}
	if len(o.Steps) != 1 || o.Steps[0].Stats.Requests < curlIntents {
		return 0, 0, fmt.Errorf("the curl client's run sent %d attempts for %d intents", o.Requests, curlIntents)
	}
	through = o.Steps[0].Stats.Elapsed.Seconds()
	body := `{"sku":"A-100","qty":1,"amount":100}`
	start := time.Now()
	slots := make(chan struct{}, curlConcurrency)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range curlIntents {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			cmd := exec.CommandContext(ctx, script)
			cmd.Env = append(os.Environ(), "IDEMCHAOS_URL="+direct, "IDEMCHAOS_PATH=/v1/orders", "IDEMCHAOS_TOKEN=tok-t1",
				fmt.Sprintf("IDEMCHAOS_INTENT=i%d", i+1), "IDEMCHAOS_TENANT=t1", "IDEMCHAOS_BODY="+body)
			cmd.Stdin = strings.NewReader(body)
			if err := cmd.Run(); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	straight = time.Since(start).Seconds()
	if n := failed.Load(); n > 0 {
		return 0, 0, fmt.Errorf("the curl client failed %d of %d invocations straight at the reference", n, curlIntents)
	}
	return through, straight, nil
}

// serveReference serves the reference in-process on a database of local's
// own, until ctx ends, and returns its base URL.
func serveReference(ctx context.Context, local *env.Local) (string, error) {
	dsn, err := local.Primary().CreateDatabase(ctx, "curlbench")
	if err != nil {
		return "", err
	}
	ready, failed := make(chan string, 1), make(chan error, 1)
	go func() {
		failed <- reference.Serve(ctx, reference.Config{DSN: dsn, Addr: "127.0.0.1:0", Ready: func(a string) { ready <- a }}, io.Discard)
	}()
	select {
	case a := <-ready:
		return "http://" + a, nil
	case err := <-failed:
		return "", fmt.Errorf("the reference straight at which curl runs: %w", err)
	}
}

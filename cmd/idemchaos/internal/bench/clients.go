package bench

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"

	"github.com/idemchaos/idemchaos/examples/foreign"
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
	var direct, proxied, toxi, ratios, rates, cpus []float64
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
		r, _ := strconv.ParseFloat(m[2], 64)
		cpu, _ := strconv.ParseFloat(c[1], 64)
		rates, cpus = append(rates, r), append(cpus, cpu)
		res.Rounds = i + 1
		res.Direct, res.Proxied, res.Toxiproxy, res.Ratio = Summarize(direct), Summarize(proxied), Summarize(toxi), Summarize(ratios)
		res.CheckRate, res.CheckCPU = Summarize(rates), Summarize(cpus)
		b.logf("clients %d/%d: direct %.1f µs, proxied %.1f µs, toxiproxy %.1f µs (ratio %.2f×); check %s events/s",
			i+1, b.opts.Repeats, us[0], us[1], us[2], us[3], rate(r))
	}
	return nil
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
	p("")
	p("Not a row of this section yet: the 200-intent run of the curl client at concurrency 8 against the same invocations " +
		"sent to the upstream directly (≤ 2× wanted).")
	p("")
}

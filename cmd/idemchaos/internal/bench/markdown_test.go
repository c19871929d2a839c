package bench_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

// report is a small report as a full run would make it: one mutant caught
// every time but slowly, one escape, one inconclusive storm run, a driver
// below target and a checker above it.
func report() *bench.Report {
	return &bench.Report{
		Machine: bench.Machine{Cores: 2, MemoryGiB: 23.4, Go: "go1.26", Date: time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)},
		Elapsed: time.Minute,
		Sections: []bench.SectionRun{{Name: bench.SectionDetection, Elapsed: 30 * time.Second},
			{Name: bench.SectionFalseAlarms, Elapsed: 20 * time.Second}},
		Detection: &bench.DetectionResult{Seeds: 2, Scenarios: 13, Mutants: []bench.MutantDetection{
			{Mutant: "no-key", Expected: "exactly-once", Seeds: 2, Caught: 2, Time: bench.Summarize([]float64{4, 5}),
				Requests: bench.Summarize([]float64{30, 30}), By: map[string]int{"response-drop-replay": 2}},
			{Mutant: "no-lease", Expected: "eventually-decided", Seeds: 2, Caught: 1, Time: bench.Summarize([]float64{1}),
				Requests: bench.Summarize([]float64{19}), By: map[string]int{"crash-mid-request": 1},
				Escapes: []bench.Escape{{Seed: 2, Reason: "no scenario caught it"}}},
		}},
		FalseAlarms: &bench.FalseAlarmResult{Scenario: "storm", Seeds: 2, Pass: 1, Inconclusive: 1,
			Bad: []bench.RunVerdict{{Scenario: "storm", Seed: 2, Verdict: bench.VerdictUnknown, Reason: "check 6/7 eventually-decided: unknown", History: "/tmp/h.jsonl"}}},
		Driver: &bench.DriverResult{Concurrency: 16, Slice: 2 * time.Second, WrkThreads: 2,
			Wrk: bench.Summarize([]float64{40000}), WrkProxy: bench.Summarize([]float64{20000}),
			Driver: bench.Summarize([]float64{10000}), DriverProxy: bench.Summarize([]float64{8000}),
			Vegeta: bench.Summarize([]float64{5000}), VegetaProxy: bench.Summarize([]float64{6400})},
		Checker: &bench.CheckerResult{Sizes: []bench.CheckerSize{
			{Events: 100_000, Decode: bench.Summarize([]float64{4e6}), LoadCheck: bench.Summarize([]float64{2e6})},
			{Events: 1_000_000, Decode: bench.Summarize([]float64{4e6}), LoadCheck: bench.Summarize([]float64{1.5e6})},
		}},
	}
}

func TestReport_MarkdownSaysWhichTargetsWereMissed(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := report().Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| mutants caught at every seed | 2/2 | 1/2 (2 seeds each) | **missed** |",
		"| median time to first detection, slowest mutant | ≤ 3 s | 4.50 s (no-key) | **missed** (1.50 s over) |",
		"| inconclusive runs of the correct reference (storm × 2 seeds) | 0 | 1 | **missed** |",
		"| driver (recording) / wrk, direct | ≥ 0.7× | 0.25× | **missed** (64% short) |",
		"| driver (recording) / vegeta, direct | ≥ 1.5× | 2.00× | met |",
		"| driver (recording) / vegeta, both through the proxy | ≥ 1.5× | 1.25× | **missed** (17% short) |",
		"| vegeta | through the proxy | 6400 | 6400 | 6400 | 0.32× | 1.00× |",
		"| checker (load + 7 checks), 1M events | ≥ 1.00M events/s | 1.50M events/s | met |",
		"| per-event cost, 1M events over 100k | ≤ 1.2× | 1.33× | **missed** (0.13× over) |",
		"- no-lease, seed 2: no scenario caught it",
		"- storm seed 2: **inconclusive** — check 6/7 eventually-decided: unknown (history `/tmp/h.jsonl`)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

// A machine without wrk still gets the driver section, which says so
// instead of leaving the reader to guess why wrk's rows are empty.
func TestReport_DriverSectionSaysWhenWrkIsMissing(t *testing.T) {
	t.Parallel()
	r := report()
	r.Driver.WrkMissing = true
	r.Driver.Wrk, r.Driver.WrkProxy = bench.Summary{}, bench.Summary{}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**wrk is not installed on this machine: its rows are empty**",
		"| wrk | direct | — | — | — | — | — |",
		"| driver (recording) / wrk | ≥ 0.7× | wrk not installed | not measured |",
		"| driver (recording) / vegeta, direct | ≥ 1.5× | 2.00× | met |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "driver (recording) / wrk, direct") {
		t.Errorf("the report rates the driver against a wrk that did not run:\n%s", md)
	}
}

func TestReport_GateFailsOnEscapeAndInconclusive(t *testing.T) {
	t.Parallel()
	err := report().Gate()
	if !errors.Is(err, bench.ErrGate) {
		t.Fatalf("Gate() = %v, want ErrGate", err)
	}
	for _, want := range []string{"mutant no-lease escaped seed 2", "storm seed 2: inconclusive"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Gate() = %v, lacks %q", err, want)
		}
	}
	clean := report()
	clean.Detection.Mutants = clean.Detection.Mutants[:1]
	clean.FalseAlarms.Bad, clean.FalseAlarms.Inconclusive = nil, 0
	if err := clean.Gate(); err != nil {
		t.Errorf("Gate() on a clean report = %v", err)
	}
}

func TestRun_UnknownSectionIsAnError(t *testing.T) {
	t.Parallel()
	_, err := bench.Run(t.Context(), bench.Options{Only: []string{"speed"}})
	if !errors.Is(err, bench.ErrUnknownSection) {
		t.Fatalf("Run(--only speed) = %v, want ErrUnknownSection", err)
	}
}

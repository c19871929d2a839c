package bench

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample is a report as a run of the given sections would make it, with
// figures that say which run made them (mark).
func sample(mark float64, rewrite []string, sections ...string) *Report {
	r := &Report{Machine: Machine{Cores: 2, Go: "go1.26", Date: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC), Load1Start: mark},
		Options: Options{Rewrite: rewrite}}
	for _, s := range sections {
		r.Sections = append(r.Sections, SectionRun{Name: s, Started: r.Machine.Date, Elapsed: time.Minute, Load1Before: mark})
		switch s {
		case SectionDetection:
			r.Detection = &DetectionResult{Seeds: 2, Scenarios: 13, Mutants: []MutantDetection{{Mutant: "no-key", Expected: "exactly-once",
				Seeds: 2, Caught: 2, Time: Summarize([]float64{mark}), Requests: Summarize([]float64{30}), By: map[string]int{"storm": 2}}}}
		case SectionFalseAlarms:
			r.FalseAlarms = &FalseAlarmResult{Scenario: "storm", Seeds: 2, Pass: 2}
		case SectionForeign:
			r.Foreign = &ForeignResult{}
		case SectionDriver:
			r.Driver = &DriverResult{Concurrency: 16, Slice: time.Second, Wrk: Summarize([]float64{mark * 1000}), Driver: Summarize([]float64{mark * 900})}
		case SectionChecker:
			r.Checker = &CheckerResult{Sizes: []CheckerSize{{Events: 10_000, Decode: Summarize([]float64{mark * 1e6}), LoadCheck: Summarize([]float64{mark * 1e6})}}}
		case SectionDemo:
			r.Demo = &DemoResult{Runs: 1, Wall: Summarize([]float64{mark * 10}), OK: 1}
		}
	}
	return r
}

func markdown(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// blockText returns the text of block name in md, markers included.
func blockText(t *testing.T, md []byte, name string) string {
	t.Helper()
	spans, err := findBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	sp, ok := spans[name]
	if !ok {
		t.Fatalf("no block %q in:\n%s", name, md)
	}
	return string(md[sp.start:sp.end])
}

// withHand is a whole report with sections measured by hand between and
// after the generated blocks, as BENCHMARKS.md has them.
func withHand(t *testing.T, md []byte) []byte {
	t.Helper()
	s := string(md)
	for _, at := range []string{endMarker(SectionTargets), endMarker(SectionChecker), endMarker(SectionDemo)} {
		i := strings.Index(s, at)
		if i < 0 {
			t.Fatalf("no %s in:\n%s", at, s)
		}
		i += len(at) + 1
		s = s[:i] + "\n## Measured by hand after " + at + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n" + s[i:]
	}
	return []byte(s + "\n## Reliability (by hand)\n\nno panics\n")
}

func handParts(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if strings.Contains(l, "by hand") || l == "| 1 | 2 |" || l == "no panics" {
			out = append(out, l)
		}
	}
	return out
}

// A partial run rewrites its own sections and their rows of the Sections
// table, and nothing else: the Targets table, the other sections and every
// hand-measured part stay byte for byte.
func TestSplice_APartialRunRewritesOnlyItsSections(t *testing.T) {
	t.Parallel()
	all := []string{SectionDetection, SectionFalseAlarms, SectionForeign, SectionDriver, SectionChecker, SectionDemo}
	old := withHand(t, markdown(t, sample(1, nil, all...)))
	run := sample(7, []string{SectionChecker}, SectionChecker)
	got, err := run.Splice(old)
	if err != nil {
		t.Fatal(err)
	}
	if !run.KeptTargets() {
		t.Error("a checker-only run says it rewrote the Targets table")
	}
	for _, keep := range []string{blockHeader, SectionTargets, SectionDetection, SectionDriver, SectionDemo} {
		if a, b := blockText(t, old, keep), blockText(t, got, keep); a != b {
			t.Errorf("block %s changed:\n%s\n---\n%s", keep, a, b)
		}
	}
	if a, b := blockText(t, got, SectionChecker), blockText(t, markdown(t, run), SectionChecker); a != b {
		t.Errorf("the checker block is not the new run's:\n%s\n---\n%s", a, b)
	}
	if h := handParts(string(got)); !slices.Equal(h, handParts(string(old))) || len(h) != 8 {
		t.Errorf("the parts measured by hand changed: %q", h)
	}
	secs := blockText(t, got, blockSections)
	if !strings.Contains(secs, "| checker | 2026-12-02 08:00 UTC | 1m0s | 7.00 |") || !strings.Contains(secs, "| detection | 2026-12-02 08:00 UTC | 1m0s | 1.00 |") ||
		strings.Count(secs, "| checker |") != 1 || strings.Count(secs, "\n| ") != 7 {
		t.Errorf("the Sections table does not hold the old rows with checker's replaced:\n%s", secs)
	}
	if d, c, m := strings.Index(secs, "| driver |"), strings.Index(secs, "| checker |"), strings.Index(secs, "| demo |"); d >= c || c >= m {
		t.Errorf("checker's row moved from its place:\n%s", secs)
	}
}

// --only targets runs what the Targets table is made of and rewrites that
// table alone.
func TestSplice_OnlyTargetsRewritesTheTargetsTableAlone(t *testing.T) {
	t.Parallel()
	o, err := Options{Only: []string{SectionTargets}, HistoryDir: t.TempDir()}.resolve(false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Only, TargetSections()) || !slices.Equal(o.Rewrite, []string{SectionTargets}) {
		t.Fatalf("--only targets runs %v and rewrites %v", o.Only, o.Rewrite)
	}
	old := withHand(t, markdown(t, sample(1, nil, TargetSections()...)))
	run := sample(7, o.Rewrite, o.Only...)
	got, err := run.Splice(old)
	if err != nil {
		t.Fatal(err)
	}
	if run.KeptTargets() {
		t.Error("--only targets says it kept the Targets table")
	}
	want := blockText(t, markdown(t, run), SectionTargets)
	if b := blockText(t, got, SectionTargets); b != want || !strings.Contains(b, "70.0 s") {
		t.Errorf("the Targets table is not the new run's:\n%s\n---\n%s", b, want)
	}
	// Everything else is the old file, byte for byte.
	oldT := blockText(t, old, SectionTargets)
	if strings.Replace(string(got), want, oldT, 1) != string(old) {
		t.Error("--only targets changed more than the Targets table")
	}
}

// A full run into its own output changes nothing (the blocks are found
// where it wrote them), and a whole report is every block.
func TestSplice_AFullRunIntoItsOwnReportIsTheSame(t *testing.T) {
	t.Parallel()
	run := sample(3, nil, TargetSections()...)
	md := markdown(t, run)
	got, err := run.Splice(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, md) {
		t.Errorf("splicing a run into its own report changed it:\n%s\n---\n%s", md, got)
	}
	// A quick run (no foreign, driver…) keeps the Targets table.
	quick := sample(5, nil, SectionDetection, SectionFalseAlarms)
	if !quick.KeptTargets() {
		t.Error("a run without every Targets section rewrites the Targets table")
	}
	got, err = quick.Splice(md)
	if err != nil {
		t.Fatal(err)
	}
	if blockText(t, got, SectionTargets) != blockText(t, md, SectionTargets) {
		t.Error("a quick run rewrote the Targets table")
	}
}

// A file bench cannot find its blocks in is refused before anything is
// measured, with the line that is wrong.
func TestCheckSplice_RefusesWhatItCannotKeep(t *testing.T) {
	t.Parallel()
	for md, want := range map[string]string{
		"# Benchmarks\n\nby hand\n":                                                               "holds no idemchaos bench markers",
		"<!-- idemchaos bench: checker -->\nx\n":                                                  "never ends",
		"<!-- idemchaos bench: checker -->\n<!-- idemchaos bench: demo -->\n":                     "line 2: block \"demo\" begins inside block \"checker\"",
		"<!-- idemchaos bench: nope -->\n<!-- /idemchaos bench: nope -->\n":                       "line 1: unknown block \"nope\"",
		"<!-- idemchaos bench: demo -->\n<!-- /idemchaos bench: checker -->\n":                    "line 2: block \"checker\" ends, but \"demo\" is open",
		"<!-- idemchaos bench: demo -->\n<!-- /idemchaos bench: demo -->\n" + beginMarker("demo"): "appears twice",
	} {
		err := CheckSplice([]byte(md))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSplice(%q) = %v, want %q", md, err, want)
		}
	}
}

// The committed BENCHMARKS.md is one bench can write into, with the
// blocks the lead regenerates: `idemchaos bench --only targets` finds its
// table.
func TestCheckSplice_TheCommittedReport(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../../../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	spans, err := findBlocks(md)
	if err != nil {
		t.Fatalf("BENCHMARKS.md: %v", err)
	}
	for _, name := range []string{blockHeader, SectionTargets, blockSections, SectionDetection, SectionChecker} {
		if _, ok := spans[name]; !ok {
			t.Errorf("BENCHMARKS.md has no %q block", name)
		}
	}
}

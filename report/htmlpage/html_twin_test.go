package htmlpage_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// goldenPaths are every golden history of the checkers.
func goldenPaths(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "histories", "*", "*.jsonl"))
	if err != nil || len(paths) < 50 {
		tb.Fatalf("golden histories: %d found (%v)", len(paths), err)
	}
	return paths
}

// goldenSweep is a seed sweep's report over the histories at paths: each history
// checked as runs of seeds 1..seeds (its violations repeat across them,
// as a sweep's do), every run given the facts a run against the reference
// carries, the runs in lost without their history.
func goldenSweep(tb testing.TB, paths []string, seeds int, lost func(i int) bool) (report.Report, []htmlpage.Timeline) {
	tb.Helper()
	var runs []report.Run
	hs := map[string]*history.History{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		h := loadHistory(tb, string(b))
		// Each history by its own suite: a client run's by the client
		// invariants.
		suite, err := checkers.ForContract(checkers.DefaultContract(), checkers.DefaultNames(h.Meta.Mode)...)
		if err != nil {
			tb.Fatal(err)
		}
		res := suite.Check(h, h.Effects)
		// Named "../testdata/…" as when these tests ran in report/, so
		// the sweep's pinned bytes (testdata/pages.sha256) still hold.
		file := strings.TrimPrefix(filepath.ToSlash(path), "../")
		for seed := 1; seed <= seeds; seed++ {
			name := fmt.Sprintf("%s#seed%d", file, seed)
			run := report.FromCheck(name, h, res)
			run.File = file // one scenario file, a history per seed
			run.Seed, run.Requests, run.ElapsedMS = int64(seed), int64(len(h.Attempts)), int64(17*seed)
			run.Replay = fmt.Sprintf("idemchaos run -s %s --seed %d", filepath.Base(path), seed)
			if !run.Met {
				run.Repro = "reproducible (3/3)"
			}
			if !lost(len(runs)) {
				hs[htmlpage.HistoryKey(run, len(runs))] = h
			}
			runs = append(runs, run)
		}
	}
	rep := report.New(runs)
	return rep, htmlpage.Timelines(rep, hs)
}

// TestWriteHTML_ByHandIsTheTemplate holds html_run.go's hand-written run
// sections to their template, assets/run.tmpl, the markup's source of
// truth: the two pages are the same bytes over real report data — every
// golden history alone, all of them as one seed sweep (repeats, histories
// lost, the index), and a set of outcomes that take every branch (a catch
// matrix's folded mutants, errors, shrunk plans, steps with expectations,
// violations past the timeline cap, hostile strings).
func TestWriteHTML_ByHandIsTheTemplate(t *testing.T) {
	t.Parallel()
	type page struct {
		rep report.Report
		tls []htmlpage.Timeline
	}
	pages := map[string]func() page{}
	// What each page must show, so that every branch is compared.
	shows := map[string][]string{
		"sweep of every golden, some histories lost": {`<svg class="tl"`, `class="timeline repeat"`, `No timeline:`, `<p class="repeats">`, `reproducible (3/3)`,
			`<table class="trail"`, `<tr class="step rekey">`, `<rect class="wait short"`, `<line class="rekey"`, `shorter than asked`, `they contradict each other`, `they agree`, `the client said it cannot know`, `proxy, forwarded`, `<details class="trails-more"><summary>9 more intents</summary>`},
		"matrix, mutants folded":              {`<details><summary>`, `class="shrunk"`, `<p class="error">`, `(expects exactly-once)`, `Catch matrix`},
		"violations past the timeline cap":    {`<section class="undrawn">`},
		"more violations than the page lists": {`more; the text and JSON reports list them all`},
		"hostile strings":                     {`&lt;script&gt;`},
		"a failure repeated across runs":      {`whose timeline shows it`},
		"a drawn fixture":                     {`class="attempt info open"`, `class="region`, `class="effect"`},
	}
	for _, path := range goldenPaths(t) {
		pages["golden "+filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path)] = func() page {
			rep, tls := checkedReport(t, path)
			return page{rep, tls}
		}
	}
	pages["sweep of every golden, some histories lost"] = func() page {
		rep, tls := goldenSweep(t, goldenPaths(t), 3, func(i int) bool { return i < 3 || i%7 == 3 })
		return page{rep, tls}
	}
	pages["matrix, mutants folded"] = func() page {
		rep, tls := goldenSweep(t, goldenPaths(t)[:12], 2, func(i int) bool { return i == 0 })
		for i := range rep.Runs {
			run := &rep.Runs[i]
			if i%3 != 0 {
				run.Mutant, run.Expect, run.Met = "no-key", "caught", run.Verdict == "violation"
			}
			if i%5 == 1 {
				run.Shrunk = &report.Shrunk{From: 20, To: 2, Runs: 9, Plan: "intent i1 <t1> k-1 POST /v1/orders\nintent i2 & \"more\""}
			}
			if i%4 == 2 {
				run.Error = "reference target: start service: <exit 2>"
				run.Steps = append(run.Steps, report.Step{Name: "after the crash", Expect: "exactly-once", Verdict: "violation",
					Invariants: []report.Invariant{{Name: "exactly-once", Verdict: "violation", Checked: 4, Reason: "1 key judged"}}})
			}
		}
		rep.Matrix = &report.Matrix{OK: false, ElapsedMS: 4321,
			Reference: report.MatrixRow{Clean: true, Runs: 4, ElapsedMS: 900, Requests: 120},
			Mutants: []report.MatrixRow{{Mutant: "no-key", Pitfall: "the key is ignored", Expected: "exactly-once", Caught: true,
				By: []string{"exactly-once"}, Scenario: "response-drop-replay"}, {Mutant: "no-lease", Expected: "eventually-decided", Error: "boom <b>"}}}
		return page{rep, tls}
	}
	pages["violations past the timeline cap"] = func() page {
		var vs []report.Violation
		for i := range htmlpage.MaxTimelinesPerRun + 3 {
			vs = append(vs, report.Violation{Tenant: "t1", Method: "POST", Path: "/v1/orders", Key: fmt.Sprint("key-", i), Ops: []int64{int64(i), int64(i + 1)},
				Explanation: fmt.Sprint("broken ", i), Cause: "a cause"})
		}
		rep := report.New([]report.Run{{Scenario: "s", Verdict: "violation", Steps: []report.Step{{Expect: "clean", Invariants: []report.Invariant{
			{Name: "exactly-once", Verdict: "violation", Violations: vs}}}}}})
		return page{rep, htmlpage.Timelines(rep, nil)}
	}
	pages["more violations than the page lists"] = func() page {
		var vs []report.Violation
		for i := range 503 {
			vs = append(vs, report.Violation{Key: fmt.Sprint("key-", i), Explanation: fmt.Sprint("broken ", i)})
		}
		return page{report.New([]report.Run{{Scenario: "s", Verdict: "violation", Steps: []report.Step{{Invariants: []report.Invariant{
			{Name: "exactly-once", Verdict: "violation", Violations: vs}}}}}}), nil}
	}
	pages["hostile strings"] = func() page {
		rep, tls := hostileHistory(t, hostile)
		rep.Runs[0].Replay = "idemchaos run -s " + hostile[1]
		rep.Runs[0].Error = hostile[0]
		rep.Runs[0].Mutant, rep.Runs[0].Repro = hostile[1], hostile[0]
		return page{rep, tls}
	}
	pages["a failure repeated across runs"] = func() page {
		rep := sweep()
		return page{rep, htmlpage.Timelines(rep, map[string]*history.History{"h/s1.jsonl": reuseHistory(t, "k-1")})}
	}
	pages["a drawn fixture"] = func() page {
		rep := violatingReport("h.jsonl", report.Violation{Tenant: "t1", Key: "k-9", Intent: "i1", Ops: []int64{1, 2}})
		return page{rep, []htmlpage.Timeline{fixtureTimeline(t)}}
	}
	for name, make := range pages {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := make()
			var byHand, byTemplate bytes.Buffer
			if err := htmlpage.Write(&byHand, p.rep, p.tls); err != nil {
				t.Fatal(err)
			}
			if err := htmlpage.WriteByTemplate(&byTemplate, p.rep, p.tls); err != nil {
				t.Fatal(err)
			}
			for _, want := range append(shows[name], `<section class="run"`) {
				if !bytes.Contains(byHand.Bytes(), []byte(want)) {
					t.Errorf("the page lacks %q: the comparison misses a branch", want)
				}
			}
			if a, b := byHand.String(), byTemplate.String(); a != b {
				i := 0
				for i < min(len(a), len(b)) && a[i] == b[i] {
					i++
				}
				from := max(0, i-120)
				t.Errorf("the hand-written page differs from the template's at byte %d (line %d):\nby hand:     %q\nby template: %q",
					i, strings.Count(a[:i], "\n")+1, a[from:min(len(a), i+120)], b[from:min(len(b), i+120)])
			}
		})
	}
}

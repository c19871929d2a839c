package htmlpage_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// reuse is a violation as the reuse-rejected checker words it for one seed.
func reuse(key string, op, first int) report.Violation {
	return report.Violation{Tenant: "t1", Method: "POST", Path: "/v1/orders", Key: key, Intent: "i-" + key, Ops: []int64{int64(op)},
		Explanation: fmt.Sprintf("t1 POST /v1/orders %s was reused with a different payload (op %d) and got the other payload's response (the same 201 and body as op %d); it must be rejected with 422.", key, op, first),
		Cause:       "the fingerprint is not compared"}
}

func seedRun(seed int64, history string, vs ...report.Violation) report.Run {
	return report.Run{Scenario: "key-reuse", File: "scenarios/key-reuse.yaml", Seed: seed, Mutant: "no-fingerprint", History: history,
		Verdict: "violation", Steps: []report.Step{{Expect: "clean", Verdict: "violation", Invariants: []report.Invariant{
			{Name: "reuse-rejected", Verdict: "violation", Violations: vs}}}}}
}

func TestSignature_SameFailureAcrossSeeds(t *testing.T) {
	t.Parallel()
	a := htmlpage.Signature(seedRun(1, "a"), 0, "reuse-rejected", reuse("k-3", 7, 2))
	if b := htmlpage.Signature(seedRun(2, "b"), 0, "reuse-rejected", reuse("order-19", 112, 40)); a != b {
		t.Errorf("another seed's key and ops give another signature:\n%q\n%q", a, b)
	}
	other := reuse("k-3", 7, 2)
	other.Explanation = strings.Replace(other.Explanation, "got the other payload's response", "executed it", 1)
	for name, sig := range map[string]string{
		"another wording":   htmlpage.Signature(seedRun(1, "a"), 0, "reuse-rejected", other),
		"another invariant": htmlpage.Signature(seedRun(1, "a"), 0, "replay-identical", reuse("k-3", 7, 2)),
		"another mutant":    htmlpage.Signature(report.Run{Scenario: "key-reuse", File: "scenarios/key-reuse.yaml", Mutant: "no-lease", Steps: seedRun(1, "a").Steps}, 0, "reuse-rejected", reuse("k-3", 7, 2)),
		"another cause":     htmlpage.Signature(seedRun(1, "a"), 0, "reuse-rejected", report.Violation{Key: "k-3", Explanation: reuse("k-3", 7, 2).Explanation, Cause: "x"}),
	} {
		if sig == a {
			t.Errorf("%s gives the same signature", name)
		}
	}
}

// sweep is three seeds of one bug, each run with its history file.
func sweep() report.Report {
	return report.New([]report.Run{
		seedRun(1, "h/s1.jsonl", reuse("k-1", 4, 1)),
		seedRun(2, "h/s2.jsonl", reuse("k-2", 9, 3)),
		seedRun(3, "h/s3.jsonl", reuse("k-7", 12, 5)),
	})
}

// reuseHistory is a history in which key k of tenant t1 was reused: op 1
// with one payload, op 2 with another, both 201.
func reuseHistory(t *testing.T, key string) *history.History {
	return loadHistory(t, `{"type":"meta","v":1,"scenario":"key-reuse","seed":1}
{"type":"invoke","op":1,"intent":"a","tenant":"t1","key":"`+key+`","attempt":1,"client":1,"ns":1000000,"req":{"method":"POST","path":"/v1/orders","body":"{\"n\":1}"}}
{"type":"ok","op":1,"ns":2000000,"resp":{"status":201,"body":"{}"}}
{"type":"invoke","op":2,"intent":"b","tenant":"t1","key":"`+key+`","attempt":1,"client":1,"ns":3000000,"req":{"method":"POST","path":"/v1/orders","body":"{\"n\":2}"}}
{"type":"ok","op":2,"ns":4000000,"resp":{"status":201,"body":"{}"}}
`)
}

// A seed sweep against one bug draws its failure once; the other runs'
// violations are rows naming their history files, and only the drawn
// run's history is needed.
func TestTimelines_RepeatedFailureDrawnOnce(t *testing.T) {
	t.Parallel()
	rep := sweep()
	if got := htmlpage.TimelineRuns(rep, nil); fmt.Sprint(got) != "[0]" {
		t.Fatalf("TimelineRuns = %v, want [0]: one history for one signature", got)
	}
	hs := map[string]*history.History{"h/s1.jsonl": reuseHistory(t, "k-1")}
	tls := htmlpage.Timelines(rep, hs)
	if len(tls) != 3 || tls[0].Repeat || tls[0].Missing != "" || len(tls[0].Lanes) == 0 || !tls[1].Repeat || !tls[2].Repeat {
		t.Fatalf("timelines: %+v", tls)
	}
	if tls[1].Missing != "" || len(tls[1].Lanes) != 0 {
		t.Errorf("a repeat is neither drawn nor missing: %+v", tls[1])
	}
	page := renderHTML(t, rep, tls)
	if n := strings.Count(page, "<svg"); n != 1 {
		t.Errorf("%d drawings, want 1", n)
	}
	for _, want := range []string{
		`in 2 more violations of 2 other runs is not drawn again: each is listed in its run with the file that holds that run's history.`,
		`<section class="timeline repeat" id="v2" data-key="k-2"`,
		`Not drawn: the same failure as <a href="#v1">#1</a> (key-reuse [mutant no-fingerprint], seed 1), whose timeline shows it. This run's history: <a href="h/s2.jsonl"><code>h/s2.jsonl</code></a>.`,
		`This run's history: <a href="h/s3.jsonl"><code>h/s3.jsonl</code></a>.`,
		`<summary>the same failure in 2 more violations of other runs, not drawn again</summary>`,
		`<li><a href="#v3">#3</a> key-reuse [mutant no-fingerprint], seed 3, tenant <code>t1</code>, key <code>k-7</code></li>`,
		`was reused with a different payload (op 12)`, // every explanation is on the page
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The index lists the drawn failure, with its repeats folded under it.
	if n := strings.Count(page, `">reuse-rejected</a>`); n != 1 {
		t.Errorf("%d top-level index entries, want 1", n)
	}
}

// When the first run's history cannot be read, the next run of the same
// signature draws it, and the first becomes a repeat that links there.
func TestTimelines_RepeatedFailureDrawnFromALoadedHistory(t *testing.T) {
	t.Parallel()
	rep := sweep()
	if got := htmlpage.TimelineRuns(rep, map[int]bool{0: true}); fmt.Sprint(got) != "[1]" {
		t.Fatalf("TimelineRuns with run 0 lost = %v, want [1]", got)
	}
	tls := htmlpage.Timelines(rep, map[string]*history.History{"h/s2.jsonl": reuseHistory(t, "k-2")})
	if !tls[0].Repeat || tls[1].Repeat || len(tls[1].Lanes) == 0 || !tls[2].Repeat {
		t.Fatalf("timelines: %+v", tls)
	}
	page := renderHTML(t, rep, tls)
	if !strings.Contains(page, `Not drawn: the same failure as <a href="#v2">#2</a> (key-reuse [mutant no-fingerprint], seed 2)`) {
		t.Error("run 0's violation does not link to the timeline drawn in run 1")
	}
	// No history at all: the first run says what is missing, once.
	tls = htmlpage.Timelines(rep, nil)
	if tls[0].Repeat || tls[0].Missing != "history h/s1.jsonl was not loaded" || !tls[1].Repeat || !tls[2].Repeat {
		t.Errorf("timelines without histories: %+v", tls)
	}
}

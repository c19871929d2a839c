package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// reuseHistoryJSONL is a history in which tenant t1's key k-1 was reused
// with another payload and both got 201, as under the no-fingerprint mutant.
const reuseHistoryJSONL = `{"type":"meta","v":1,"scenario":"key-reuse","seed":1}
{"type":"invoke","op":1,"intent":"a","tenant":"t1","key":"k-1","attempt":1,"client":1,"ns":1000000,"req":{"method":"POST","path":"/v1/orders","body":"{\"n\":1}"}}
{"type":"ok","op":1,"ns":2000000,"resp":{"status":201,"body":"{}"}}
{"type":"invoke","op":2,"intent":"b","tenant":"t1","key":"k-1","attempt":1,"client":1,"ns":3000000,"req":{"method":"POST","path":"/v1/orders","body":"{\"n\":2}"}}
{"type":"ok","op":2,"ns":4000000,"resp":{"status":201,"body":"{}"}}
`

// sweepShard writes the one shard report of a three-seed sweep in which
// every seed fails the same way, each run's history named as on the CI
// machine that ran it (not a path here), and returns its file.
func sweepShard(t *testing.T, dir string) string {
	t.Helper()
	var runs []report.Run
	for seed := int64(1); seed <= 3; seed++ {
		v := report.Violation{Tenant: "t1", Method: "POST", Path: "/v1/orders", Key: "k-1", Ops: []int64{2},
			Explanation: fmt.Sprintf("key k-1 was reused with a different payload (op 2) and got the other payload's response (the same 201 and body as op 1), seed %d", seed),
			Cause:       "no fingerprint"}
		runs = append(runs, report.Run{Scenario: "key-reuse", Seed: seed, Mutant: "no-fingerprint", History: fmt.Sprintf("/ci/box-%d/s%d.jsonl", seed, seed),
			Verdict: "violation", Steps: []report.Step{{Expect: "clean", Verdict: "violation", Invariants: []report.Invariant{
				{Name: "reuse-rejected", Verdict: "violation", Checked: 1, Violations: []report.Violation{v}}}}}})
	}
	rep := report.New(runs)
	rep.Shard = &report.Shard{Index: 1, Total: 1, Scenarios: []string{"key-reuse"}, Seeds: "1-3", Mutant: "no-fingerprint", Pairs: 3}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "shard-1.json", string(b))
}

// The merged catch summary of a sweep against one bug draws the failure
// once, from one history, and lists the other seeds' violations with the
// file in --histories that holds each run's history.
func TestMerge_RepeatedFailureDrawnOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hist := filepath.Join(dir, "hist")
	if err := os.Mkdir(hist, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s1.jsonl", "s2.jsonl", "s3.jsonl"} {
		writeFile(t, hist, name, reuseHistoryJSONL)
	}
	shard := sweepShard(t, dir)
	page := filepath.Join(dir, "m.html")
	merge := func() string {
		t.Helper()
		code, _, stderr := runMain(t, "merge", shard, "--report", page, "--histories", hist)
		if code != ExitViolation {
			t.Fatalf("merge: exit %d, want 1\n%s", code, stderr)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := merge()
	if n := strings.Count(got, "<svg"); n != 1 {
		t.Errorf("%d timelines drawn, want 1 for one failure in 3 runs", n)
	}
	for _, want := range []string{
		"in 2 more violations of 2 other runs is not drawn again",
		`Not drawn: the same failure as <a href="#v1">#1</a>`,
		historyLink(filepath.Join(hist, "s2.jsonl")),
		historyLink(filepath.Join(hist, "s3.jsonl")),
		"seed 3", // every violation is there
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// The first run's history is unreadable: the next run of the same
	// failure draws it, and the page still names every file.
	writeFile(t, hist, "s1.jsonl", "not a history\n")
	got = merge()
	if n := strings.Count(got, "<svg"); n != 1 || !strings.Contains(got, `Not drawn: the same failure as <a href="#v2">#2</a>`) {
		t.Errorf("with s1.jsonl unreadable: %d drawings, want 1, from seed 2's history", n)
	}
	if !strings.Contains(got, historyLink(filepath.Join(hist, "s1.jsonl"))) {
		t.Error("the unreadable run's row does not name its file")
	}
}

// historyLink is how the page names a run's history: a link to its file.
func historyLink(path string) string {
	return `This run's history: <a href="` + path + `"><code>` + path + `</code></a>.`
}

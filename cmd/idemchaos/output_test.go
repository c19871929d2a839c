package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

// TestRun_UnwritableOutputsRefusedBeforeTraffic: a --junit, --report or
// --history path that cannot be written is found before a single request
// is sent (it used to be found after the whole run), exit 3 at once.
func TestRun_UnwritableOutputsRefusedBeforeTraffic(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusCreated)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	scenario := writeFile(t, dir, "s.yaml", "target: {url: http://"+ln.Addr().String()+"}\ntraffic: {intents: 3}\neffects: {oracle: none}\n")
	missing := filepath.Join(dir, "no", "such", "dir")
	for name, c := range map[string]struct {
		flags []string
		want  string
	}{
		"junit in a missing dir":   {[]string{"--junit", filepath.Join(missing, "r.xml")}, "--junit " + filepath.Join(missing, "r.xml")},
		"report is a directory":    {[]string{"--report", dir}, "--report " + dir + ": cannot write there: it is a directory"},
		"history in a missing dir": {[]string{"--history", filepath.Join(missing, "h.jsonl")}, "--history "},
		"json and junit":           {[]string{"--json", "--junit", filepath.Join(missing, "r.xml")}, "--junit "},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runMain(t, append([]string{"run", "-s", scenario}, c.flags...)...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want 3 with %q\nstdout:\n%s\nstderr:\n%s", code, c.want, stdout, stderr)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests sent before the output path was refused", n)
			}
			t.Logf("refused in %s", time.Since(start).Round(time.Millisecond))
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check created directories: %v", err)
	}
}

// TestOutput_JSONExitCodeIsTheProcesss: when a report file fails after the
// runs, the JSON printed says exit_code 3 — what the process then exits
// with — and why (it said 0 while the process exited 3).
func TestOutput_JSONExitCodeIsTheProcesss(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	o := outputFlags{json: true, junit: filepath.Join(t.TempDir(), "gone", "r.xml")}
	rep := report.New(nil)
	err := o.write(cmd, rep, nil)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Fatalf("write: %v, want an exit-3 error", err)
	}
	var got struct {
		ExitCode int    `json:"exit_code"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	if got.ExitCode != ee.Code || !strings.Contains(got.Error, "--junit") {
		t.Errorf("JSON exit_code %d (error %q), process exit %d", got.ExitCode, got.Error, ee.Code)
	}
}

// fakeOutcome is a run with one step that violated the given invariants
// (none: clean), its history a file in the history dir.
func fakeOutcome(t *testing.T, name, mutant string, violated ...string) *harness.Outcome {
	t.Helper()
	res := checkers.Result{Verdict: checkers.Pass}
	for _, n := range checkers.Names() {
		r := checkers.Result{Name: n, Verdict: checkers.Pass, Checked: 1}
		for _, v := range violated {
			if v == n {
				r.Verdict, res.Verdict = checkers.Violated, checkers.Violated
				r.Violations = []checkers.Violation{{Tenant: "t1", Key: "k1", Explanation: "two orders"}}
			}
		}
		res.Results = append(res.Results, r)
	}
	dir := historyDirFor("")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, name+"-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return &harness.Outcome{Scenario: &scenarios.Scenario{Name: name, File: name + ".yaml"}, Seed: 1, Mutant: mutant, HistoryPath: f.Name(),
		Steps: []harness.StepOutcome{{Name: name, Expect: "clean", Met: len(violated) == 0, Result: res}}}
}

// TestDemoRuns_DemoSemantics: demo's JSON and JUnit list every reference
// run, a caught mutant's catching run as met (not a failure), and a mutant
// no scenario caught as a failure; met runs' histories go to passed/.
func TestDemoRuns_DemoSemantics(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(historiesEnv, filepath.Join(os.TempDir(), "idemchaos-histories"))
	m := &catchmatrix.Matrix{
		Reference: catchmatrix.Row{Clean: true, Runs: []*harness.Outcome{fakeOutcome(t, "a", ""), fakeOutcome(t, "b", "")}},
		Mutants: []catchmatrix.Row{
			{Mutant: "no-key", Expected: "exactly-once", Caught: true, Runs: []*harness.Outcome{fakeOutcome(t, "a", "no-key"), fakeOutcome(t, "b", "no-key", "exactly-once", "replay-identical")}},
			{Mutant: "no-lease", Expected: "eventually-decided", Runs: []*harness.Outcome{fakeOutcome(t, "a", "no-lease")}},
		},
	}
	escaped := m.Mutants[1].Runs[0].HistoryPath
	runs, outcomes := demoRuns(m)
	if len(runs) != 4 || len(outcomes) != 4 {
		t.Fatalf("%d runs, want 4: both reference runs, no-key's catch, no-lease's run", len(runs))
	}
	type want struct {
		mutant, expect string
		met            bool
	}
	for i, w := range []want{{"", "", true}, {"", "", true}, {"no-key", "caught", true}, {"no-lease", "caught", false}} {
		if r := runs[i]; r.Mutant != w.mutant || r.Expect != w.expect || r.Met != w.met {
			t.Errorf("run %d: mutant %q expect %q met %v, want %+v", i, r.Mutant, r.Expect, r.Met, w)
		}
	}
	var buf bytes.Buffer
	if err := report.WriteJUnit(&buf, report.New(runs)); err != nil {
		t.Fatal(err)
	}
	xml := buf.String()
	if n := strings.Count(xml, "<failure"); n != 1 || !strings.Contains(xml, "mutant no-lease not caught") {
		t.Errorf("JUnit has %d failures, want exactly one, for no-lease:\n%s", n, xml)
	}
	for i, r := range runs {
		if _, err := os.Stat(r.History); err != nil {
			t.Errorf("run %d names history %s: %v", i, r.History, err)
		}
		if inPassed := filepath.Dir(r.History) == passedDir(); inPassed != r.Met {
			t.Errorf("run %d (met %v): history %s", i, r.Met, r.History)
		}
	}
	if _, err := os.Stat(escaped); err != nil {
		t.Errorf("the escaped mutant's history moved or went: %v", err)
	}
}

// TestPrunePassed keeps the newest histories of passed runs, and every one
// of this command's, whatever their age.
func TestPrunePassed(t *testing.T) {
	t.Setenv(historiesEnv, filepath.Join(t.TempDir(), "idemchaos-histories"))
	if err := os.MkdirAll(passedDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	var mine []*harness.Outcome
	for i := range 25 {
		p := writeFile(t, passedDir(), "h"+string(rune('a'+i))+".jsonl", "{}")
		if err := os.Chtimes(p, base, base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			mine = append(mine, &harness.Outcome{HistoryPath: p})
		}
	}
	failed := writeFile(t, historyDirFor(""), "failed.jsonl", "{}")
	prunePassed(20, mine)
	entries, _ := os.ReadDir(passedDir())
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	got := strings.Join(names, " ")
	if len(names) != 22 || !strings.Contains(got, "ha.jsonl") || !strings.Contains(got, "hy.jsonl") || strings.Contains(got, "hc.jsonl") {
		t.Errorf("kept %d: %s; want the 20 newest (hf..hy) and this command's ha, hb", len(names), got)
	}
	if _, err := os.Stat(failed); err != nil {
		t.Errorf("a failed run's history was pruned: %v", err)
	}
}

// TestRun_PassingHistoriesArePruned: a run that passed leaves its history
// in passed/ (the path it prints), and IDEMCHAOS_KEEP_HISTORIES bounds how
// many older ones stay; before, every run added one file, forever.
func TestRun_PassingHistoriesArePruned(t *testing.T) {
	url := startOrdersvc(t, false)
	t.Setenv(keepHistoriesEnv, "1")
	old := writeFile(t, func() string { os.MkdirAll(passedDir(), 0o755); return passedDir() }(), "old.jsonl", "{}")
	code, stdout, stderr := runMain(t, "run", "-s", ordersvcScenario, "--target", url, "--json")
	if code != ExitClean {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rep := decodeReport(t, []byte(stdout))
	if len(rep.Runs) != 1 {
		t.Fatalf("JSON: %d runs, want 1\n%s", len(rep.Runs), stdout)
	}
	if filepath.Dir(rep.Runs[0].History) != passedDir() {
		t.Errorf("history %s, want it in %s", rep.Runs[0].History, passedDir())
	}
	if _, err := os.Stat(rep.Runs[0].History); err != nil {
		t.Errorf("the printed history is gone: %v", err)
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an older passed history was kept past IDEMCHAOS_KEEP_HISTORIES=1: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(historyDirFor(""), "*.jsonl"))
	if len(left) != 0 {
		t.Errorf("passed histories left with the failures: %v", left)
	}
}

// TestRun_PlanNamingAnUnknownFaultIsRefused: a hand-edited --plan naming a
// fault the scenario does not have is refused up front, naming the file
// and what was expected (it was ignored).
func TestRun_PlanNamingAnUnknownFaultIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := writeFile(t, dir, "s.yaml", "target: {url: 'http://"+closedPort(t)+"'}\neffects: {oracle: none}\nfaults:\n  - kind: response-drop\n    when: {fraction: 0.5}\n")
	plan := writeFile(t, dir, "p.json", `{"Seed":1,"Intents":[{"ID":"i1","Tenant":"t1","Key":"k","Method":"POST","Path":"/v1/orders","Faults":{"1":"bogus#0"}}]}`)
	code, stdout, stderr := runMain(t, "run", "-s", scenario, "--plan", plan)
	want := plan + `:1:22: Intents[0] (i1): Faults[1]: "bogus#0" is not an aimed fault of step 1 of s (expected one of response-drop#0)`
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want 3 with %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
}

// TestRun_HistoriesUnderTheWorkingDirectory: without --history a run's
// history goes to ./idemchaos-histories/ under the working directory (it
// went to one directory every user of the machine shared, pruned across
// all of them), and the report names it by its path relative to there;
// the HTML report links it relative to the page.
func TestRun_HistoriesUnderTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	work := t.TempDir()
	// A service that answers every reuse of a key 201: a violation, so
	// the page draws the run and names its history.
	scenario := writeFile(t, work, "s.yaml", "target: {url: http://"+serve(t, created)+"}\neffects: {oracle: none}\n"+
		"traffic: {intents: 8, reuse: 0.5, concurrency: 2, timeout: 300ms, retry: {max_attempts: 2}}\n")
	cmd := exec.Command(bin, "run", "-s", scenario, "--json", "--reruns", "0", "--shrink=false", "--report", filepath.Join("out", "r.html"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), historiesEnv+"=")
	if err := os.Mkdir(filepath.Join(work, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	rep := decodeReport(t, stdout)
	if len(rep.Runs) != 1 {
		t.Fatalf("%d runs\n%s", len(rep.Runs), stdout)
	}
	h := rep.Runs[0].History
	if filepath.IsAbs(h) || !strings.HasPrefix(h, "idemchaos-histories"+string(filepath.Separator)) {
		t.Fatalf("history %q: want a path relative to the working directory, under idemchaos-histories/", h)
	}
	if _, err := os.Stat(filepath.Join(work, h)); err != nil {
		t.Errorf("the history the report names is not there: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(work, "out", "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `<a href="../` + filepath.ToSlash(h) + `">`; !strings.Contains(string(page), want) {
		t.Errorf("the page does not link the history relative to itself (%s)", want)
	}
}

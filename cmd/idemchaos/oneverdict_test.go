package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// One verdict: a history judged offline gets the verdict its run got.
// runMain calls agreesWithCheck after every run, so that each run test
// (and the sweep below) checks it on the histories it made.

// runHistory is one run's history and what the run said of it.
type runHistory struct {
	path    string
	verdict string // "" when the run's output does not say (text, one run)
	exit    int
	steps   []report.Step
}

var historyLine = regexp.MustCompile(`(?m)^      history: (\S+)$`)

// runHistories lists the histories of a finished run command with the
// verdict and exit code each run got alone: from the JSON report, or from
// the summary when it is of one run.
func runHistories(args []string, code int, stdout string) []runHistory {
	if slices.Contains(args, "--json") {
		var rep report.Report
		if json.Unmarshal([]byte(stdout), &rep) != nil || rep.Error != "" {
			return nil
		}
		var out []runHistory
		for _, run := range rep.Runs {
			if run.History != "" {
				out = append(out, runHistory{run.History, run.Verdict, report.New([]report.Run{run}).ExitCode, run.Steps})
			}
		}
		return out
	}
	m := historyLine.FindAllStringSubmatch(stdout, -1)
	if len(m) != 1 {
		return nil
	}
	return []runHistory{{path: m[0][1], exit: code}}
}

// agreesWithCheck fails tb unless check of each history the run command
// made gives the run's verdict and exit code; it returns how many it
// compared. A history pruned since (runs that passed beyond the kept
// number) is not there to compare.
func agreesWithCheck(tb testing.TB, args []string, code int, stdout string) int {
	tb.Helper()
	n, problems := disagreements(tb.Context(), runHistories(args, code, stdout))
	for _, p := range problems {
		tb.Error(p)
	}
	return n
}

// disagreements checks each history and says where check's judgement
// differs from the run's; n counts the histories compared.
func disagreements(ctx context.Context, hs []runHistory) (n int, problems []string) {
	for _, h := range hs {
		if _, err := os.Stat(h.path); err != nil {
			continue
		}
		n++
		var out, errb bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
		got := m.Exit(m.Run(ctx, []string{"check", "--json", h.path}))
		var rep report.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Runs) != 1 {
			problems = append(problems, fmt.Sprintf("check --json %s: %v\n%s%s", h.path, err, out.String(), errb.String()))
			continue
		}
		if got != h.exit || (h.verdict != "" && rep.Runs[0].Verdict != h.verdict) {
			problems = append(problems, fmt.Sprintf("one verdict: run of %s gave %s, exit %d; check of its history gives %s, exit %d", filepath.Base(h.path), h.verdict, h.exit, rep.Runs[0].Verdict, got))
			continue
		}
		if h.steps == nil {
			continue
		}
		if len(h.steps) != len(rep.Runs[0].Steps) {
			problems = append(problems, fmt.Sprintf("one verdict: run of %s had %d steps, check of its history %d", filepath.Base(h.path), len(h.steps), len(rep.Runs[0].Steps)))
			continue
		}
		for i, w := range h.steps {
			g := rep.Runs[0].Steps[i]
			if w.Name != g.Name || w.Expect != g.Expect || w.Met != g.Met || w.Verdict != g.Verdict || w.Reason != g.Reason {
				problems = append(problems, fmt.Sprintf("one verdict: %s step %d: run %q expects %s, met %v, %s %q; check %q expects %s, met %v, %s %q",
					filepath.Base(h.path), i+1, w.Name, w.Expect, w.Met, w.Verdict, w.Reason, g.Name, g.Expect, g.Met, g.Verdict, g.Reason))
			}
		}
	}
	return n, problems
}

// The comparison can fail: a run said to have passed a history that check
// calls a violation, or whose step said otherwise, is reported.
func TestOneVerdict_DisagreementIsReported(t *testing.T) {
	t.Parallel()
	bad := "../../testdata/histories/exactly-once/acked-but-lost-bad.jsonl"
	n, problems := disagreements(t.Context(), []runHistory{
		{path: bad, verdict: "pass", exit: 0},
		{path: bad, verdict: "violation", exit: 1, steps: []report.Step{{Expect: "exactly-once", Met: true, Verdict: "violation"}}},
		{path: bad, verdict: "violation", exit: 1},
	})
	if n != 3 || len(problems) != 2 {
		t.Fatalf("%d compared, problems %q; want 3 compared and 2 problems", n, problems)
	}
}

// TestOneVerdict_BundledScenarios: every bundled scenario against the
// reference, two seeds each; check of each run's history gives the run's
// verdict, exit code and steps (runMain compares them).
func TestOneVerdict_BundledScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("%d bundled scenarios, %v", len(files), err)
	}
	args := append([]string{"run", "--seeds", "1-2", "--json", "--reruns", "0", "--shrink=false", "--history", t.TempDir()}, files...)
	code, stdout, stderr := runMain(t, args...)
	if code == ExitUsage {
		t.Fatalf("exit 3\n%s", stderr)
	}
	if n := len(runHistories(args, code, stdout)); n != 2*len(files) {
		t.Fatalf("%d histories compared, want %d (every scenario × 2 seeds)\n%s", n, 2*len(files), stderr)
	}
}

// A client run's history — every attempt recorded by the per-intent proxy,
// the client's beliefs beside them — judged offline gets each step's
// verdict and reason as the run did: the client probes with the corpus's
// curl client (which breaks backoff and truthful-outcome), one seed (a
// run of 13 steps of real processes: the corpus runs more).
func TestOneVerdict_ClientProbes(t *testing.T) {
	probes, err := os.ReadFile("../../examples/clients/scenarios/probes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../../examples/clients/curl/create-order.sh")
	if err != nil {
		t.Fatal(err)
	}
	rel := `["examples/clients/curl/create-order.sh"]`
	if !bytes.Contains(probes, []byte(rel)) {
		t.Fatalf("probes.yaml no longer runs %s", rel)
	}
	file := filepath.Join(t.TempDir(), "probes.yaml")
	if err := os.WriteFile(file, bytes.Replace(probes, []byte(rel), []byte(`["`+script+`"]`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--seed", "1", "--json", "--reruns", "0", "--shrink=false", "--history", filepath.Join(t.TempDir(), "probes.jsonl"), "-s", file}
	code, stdout, stderr := runMain(t, args...)
	if code != ExitViolation {
		t.Fatalf("exit %d, want 1 (curl breaks backoff and truthful-outcome)\n%s%s", code, stderr, stdout)
	}
	if n := len(runHistories(args, code, stdout)); n != 1 {
		t.Fatalf("%d histories compared, want 1\n%s", n, stderr)
	}
}

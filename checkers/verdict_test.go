package checkers_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

const verdictDir = "../testdata/verdicts"

// judgeFile judges a history as `idemchaos check` does: by the contract
// and the invariants its meta event names.
func judgeFile(t *testing.T, file string) checkers.Judgement {
	t.Helper()
	h := loadGolden(t, file, nil)
	contract, err := checkers.ContractFromMeta(h.Meta.Contract)
	if err != nil {
		t.Fatalf("meta contract: %v", err)
	}
	// A sidecar's options apply over the meta's contract, as in TestGolden_Histories.
	opts, _ := readOpts(t, strings.TrimSuffix(file, ".jsonl")+".opts")
	opts = append([]checkers.Option{checkers.WithContract(contract)}, opts...)
	names := h.Meta.Invariants
	if len(names) == 0 {
		names = checkers.DefaultNames(h.Meta.Mode)
	}
	var cs []checkers.Checker
	for _, n := range names {
		c, err := checkers.ByName(n, opts...)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return checkers.Judge(h, checkers.All(cs...), opts...)
}

// exitOf is the exit code of a judgement, as the report gives it.
func exitOf(j checkers.Judgement) int {
	switch {
	case j.Verdict == checkers.EnvironmentError:
		return 3
	case j.Met():
		return 0
	case j.Verdict == checkers.Unknown:
		return 2
	}
	return 1
}

// renderJudgement is the stable text of a judgement that the .golden files
// of testdata/verdicts hold: the verdict and exit, then per step its
// expectation, whether it was met, its verdict's reason and its failures.
func renderJudgement(j checkers.Judgement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s (exit %d)\n", j.Verdict, exitOf(j))
	for i, s := range j.Steps {
		fmt.Fprintf(&b, "step %d %q expects %s: met %v, %s\n", i+1, s.Name, s.Expect, s.Met, s.Result.Verdict)
		for _, f := range s.Result.Failures() {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	return b.String()
}

// TestGolden_Verdicts walks testdata/verdicts/<case>-<verdict>.jsonl: the
// histories that pin down the verdict rules (nothing to judge, environment
// errors, steps and their expectations). Each is judged as check judges
// it; the verdict must be the one its name says, and the rendered
// judgement equals <case>-<verdict>.golden (rewrite with -update).
func TestGolden_Verdicts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(verdictDir, "*.jsonl"))
	if err != nil || len(files) < 10 {
		t.Fatalf("%d verdict goldens, %v", len(files), err)
	}
	seen := map[checkers.Verdict]int{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			j := judgeFile(t, file)
			seen[j.Verdict]++
			want := ""
			for _, v := range []checkers.Verdict{checkers.Pass, checkers.Unknown, checkers.Violated, checkers.EnvironmentError} {
				if strings.HasSuffix(name, "-"+v.String()) {
					want = v.String()
				}
			}
			if want == "" {
				t.Fatalf("the name must end in -pass, -unknown, -violation or -environment-error")
			}
			if j.Verdict.String() != want {
				t.Fatalf("verdict %s, want %s:\n%s", j.Verdict, want, renderJudgement(j))
			}
			compareGolden(t, strings.TrimSuffix(file, ".jsonl")+".golden", renderJudgement(j))
		})
	}
}

// TestJudge_GoldenHistoriesKeepTheirVerdicts: every golden of
// testdata/histories is judged by the verdict rules as its name says —
// "-bad" a violation (the seven without any 2xx among them: a key stuck in
// 409 or 5xx forever is a finding), "-unknown" unknown — and an "-ok" case
// is never a violation. One "-ok" case is no longer a pass as a whole:
// nothing in it succeeded (its invariant still holds).
func TestJudge_GoldenHistoriesKeepTheirVerdicts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.jsonl"))
	if err != nil || len(files) < 100 {
		t.Fatalf("%d goldens, %v", len(files), err)
	}
	nothingSucceeded := map[string]bool{"eventually-decided/rejection-is-a-decision-ok": true}
	// The check finds it; the verdict sets it aside as the target's setup
	// (a backlog too small for the traffic), not its idempotency.
	setupOnly := map[string]bool{"eventually-decided/connections-refused-bad": true, "eventually-decided/overload-late-after-timeout-bad": true}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".jsonl")
		j := judgeFile(t, file)
		switch {
		case setupOnly[name]:
			if j.Verdict != checkers.Unknown || exitOf(j) != 2 || !strings.Contains(j.Steps[0].Result.Reason, "did not accept connections (capacity)") {
				t.Errorf("%s: %s (exit %d), want unknown for the capacity:\n%s", name, j.Verdict, exitOf(j), renderJudgement(j))
			}
		case strings.HasSuffix(name, "-bad"):
			if j.Verdict != checkers.Violated || exitOf(j) != 1 {
				t.Errorf("%s: %s (exit %d), want a violation:\n%s", name, j.Verdict, exitOf(j), renderJudgement(j))
			}
		case strings.HasSuffix(name, "-unknown"):
			if j.Verdict != checkers.Unknown || exitOf(j) != 2 {
				t.Errorf("%s: %s (exit %d), want unknown", name, j.Verdict, exitOf(j))
			}
		case nothingSucceeded[name]:
			if j.Verdict != checkers.Unknown || !strings.Contains(j.Steps[0].Result.Reason, "no request succeeded") {
				t.Errorf("%s: %s %q, want unknown: no request succeeded", name, j.Verdict, j.Steps[0].Result.Reason)
			}
		default:
			// A pass, or unknown where another checker could not decide a
			// small hand-built case; the same as the checks alone say.
			h := loadGolden(t, file, nil)
			contract, _ := checkers.ContractFromMeta(h.Meta.Contract)
			opts, _ := readOpts(t, strings.TrimSuffix(file, ".jsonl")+".opts")
			plain := suiteOf(t, h, append([]checkers.Option{checkers.WithContract(contract)}, opts...)).Check(h, h.Effects)
			if j.Verdict == checkers.Violated || j.Verdict != plain.Verdict {
				t.Errorf("%s: judged %s, checked %s", name, j.Verdict, plain.Verdict)
			}
		}
	}
}

// The proxy's answers ("by":"proxy") are never the service's: a client
// run's step in which the proxy answered every attempt with a permanent
// 4xx or a 429 is judged (the client took them well: a pass), where the
// same answers from the upstream would be nothing to judge.
func TestJudge_ClientStepOfInjectedAnswersIsJudged(t *testing.T) {
	t.Parallel()
	const client = `{"type":"meta","v":1,"mode":"client","effects_recorded":true}` + "\n"
	body := `{"type":"invocation","intent":"i-1","tenant":"t1","ns":1,"body":"{}"}` + "\n" +
		`{"type":"invoke","op":1,"intent":"i-1","tenant":"t1","key":"k","ns":2,"req":{"method":"POST","path":"/o","body":"{}"}}` + "\n" +
		`{"type":"ok","op":1,"ns":3,"resp":{"status":429},"retry_after_ms":100%s}` + "\n" +
		`{"type":"invoke","op":2,"intent":"i-1","tenant":"t1","key":"k","ns":200000000,"req":{"method":"POST","path":"/o","body":"{}"}}` + "\n" +
		`{"type":"ok","op":2,"ns":200000001,"resp":{"status":422}%s}` + "\n" +
		`{"type":"belief","intent":"i-1","ns":200000002,"belief":"failure","exit":1}` + "\n"
	judge := func(in string) checkers.Judgement {
		h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkers.ForContract(checkers.DefaultContract(), checkers.DefaultNames(h.Meta.Mode)...)
		if err != nil {
			t.Fatal(err)
		}
		return checkers.Judge(h, c)
	}
	by := `,"by":"proxy","forwarded":false`
	if j := judge(client + fmt.Sprintf(body, by, by)); j.Verdict != checkers.Pass || !j.Met() {
		t.Fatalf("injected answers: %s, want a pass:\n%s", j.Verdict, renderJudgement(j))
	}
	if j := judge(client + fmt.Sprintf(body, "", "")); j.Verdict != checkers.Unknown || !strings.Contains(j.Steps[0].Result.Reason, "nothing was judged") {
		t.Fatalf("the upstream's own 429 and 422: %s, want nothing to judge:\n%s", j.Verdict, renderJudgement(j))
	}
}

// A setup violation (the service refused connections) is set aside only
// when it is all a step found: beside a violation of the service's own,
// both are reported; the checks that judged the served keys keep their
// results.
func TestDecide_SetupViolationsAloneAreNothingToJudge(t *testing.T) {
	t.Parallel()
	capacity := checkers.Violation{Invariant: "eventually-decided", Key: "k1", Cause: "the service did not accept connections (capacity)", Setup: true}
	dup := checkers.Violation{Invariant: "exactly-once", Key: "k2", Cause: "the dedupe row is written after the effect"}
	facts := checkers.Facts{Steps: []checkers.StepFacts{{Expect: "clean", Attempts: 4, Answers: map[int]int{201: 3}, Fail: 1}}, Effects: 3}
	step := func(eo, ed []checkers.Violation) checkers.Result {
		verdict := func(vs []checkers.Violation) checkers.Verdict {
			if len(vs) > 0 {
				return checkers.Violated
			}
			return checkers.Pass
		}
		parts := []checkers.Result{
			{Name: "exactly-once", Verdict: verdict(eo), Violations: eo, Checked: 3},
			{Name: "eventually-decided", Verdict: verdict(ed), Violations: ed, Checked: 4},
		}
		return checkers.Result{Verdict: max(verdict(eo), verdict(ed)), Violations: append(slices.Clone(eo), ed...), Results: parts}
	}
	j := checkers.Decide(facts, []checkers.Result{step(nil, []checkers.Violation{capacity})})
	if j.Verdict != checkers.Unknown || !strings.Contains(j.Steps[0].Result.Reason, "did not accept connections (capacity) (1 key(s))") {
		t.Fatalf("capacity alone: %s, %q; want unknown naming the capacity", j.Verdict, j.Steps[0].Result.Reason)
	}
	if eo := j.Steps[0].Result.Results[0]; eo.Verdict != checkers.Pass {
		t.Errorf("exactly-once judged the served keys and passed; set aside as %s (%s)", eo.Verdict, eo.Reason)
	}
	j = checkers.Decide(facts, []checkers.Result{step([]checkers.Violation{dup}, []checkers.Violation{capacity})})
	if j.Verdict != checkers.Violated || len(j.Steps[0].Result.Violations) != 2 {
		t.Fatalf("capacity beside a duplicate: %s with %d violations, want both reported", j.Verdict, len(j.Steps[0].Result.Violations))
	}
}

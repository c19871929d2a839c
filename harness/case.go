package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/scenarios"
)

// TB is the part of testing.TB the harness uses. A small interface lets the
// harness's own tests run a failing case against a fake and assert that it
// failed, as rapid's TB does. Errorf and FailNow make every TB a testify
// require.TestingT, so a test can state its own expectations about a case
// with require and assert on the same value.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
}

// EnvSpec says which environment a [Case] runs in.
type EnvSpec struct {
	kind EnvKind
	url  string
}

// LocalEnv is the embedded environment: throwaway Postgres, in-process
// Toxiproxy, the reference as a child process.
func LocalEnv() EnvSpec { return EnvSpec{kind: EnvLocal} }

// ExternalEnv is a user's service at url: loopback unless the case sets
// [Case.AllowRemote] (a scenario's target.allow_remote only demands it).
func ExternalEnv(url string) EnvSpec { return EnvSpec{kind: EnvExternal, url: url} }

// Case is a test case: an environment and steps run in order, like
// terraform's TestCase.
type Case struct {
	Env   EnvSpec
	Steps []Step
	// Seed seeds every step that sets none (default 1): a failing case
	// replays exactly with the same seed.
	Seed int64
	// BeforeStep runs before each step with its 0-based index.
	BeforeStep func(i int)
	// Investigate says what follows a step that fails with a violation it
	// did not expect: by default the same plan is re-run [DefaultReruns]
	// times to classify the failure (reproducible or intermittent), then
	// shrunk to a minimal plan within [DefaultShrinkBudget]; the findings
	// go into the failure message. A passing step costs nothing.
	Investigate InvestigateOptions
	// NoInvestigate reports a failing step as it is, without re-runs or
	// shrinking.
	NoInvestigate bool
	// AllowRemote is the Go form of --allow-remote: the case may send
	// traffic to addresses off this machine.
	AllowRemote bool
	_           struct{}
}

// Step is one run of a scenario. Its kind is explicit in the fields it
// sets, never guessed: Scenario (a file) or Inline (a value) names what to
// run; a step that names neither reruns the previous step's scenario, which
// is how a step says "now the same against this mutant".
type Step struct {
	// Scenario is a YAML file; Inline is a scenario built in Go.
	Scenario string
	Inline   *scenarios.Scenario
	// Mutant runs the reference with this mutant ("" = the scenario's own).
	Mutant string
	// Check replaces the scenario's invariants when set.
	Check checkers.Checker
	// ExpectViolation is the negative form: the step passes only if this
	// invariant is violated. A step that expected a violation and saw none
	// fails.
	ExpectViolation string
	Seed            int64
	_               struct{}
}

// Test runs c and reports through t. It validates the whole case before
// anything starts, then runs each step and fails t (with the seed and the
// command that replays it) when a step does not do what it expects.
func Test(t TB, c Case) {
	t.Helper()
	loaded, err := c.validate()
	if err != nil {
		t.Fatalf("%v", err)
		return
	}
	ctx := context.Background()
	r, ok := openCase(t, c.Env, c.AllowRemote, loaded)
	if !ok {
		return
	}
	for i, st := range c.Steps {
		if c.BeforeStep != nil {
			c.BeforeStep(i)
		}
		s := loaded[i]
		seed := st.Seed
		if seed == 0 {
			seed = max(c.Seed, 1)
		}
		mutant := st.Mutant
		if mutant == "" && s.Target.Reference != nil && s.Target.Reference.Mutant == "" {
			mutant = CorrectService
		}
		// The replay command names the target the step ran against.
		opts := RunOptions{Seed: seed, Mutant: mutant, Expect: st.ExpectViolation,
			Invocation: Invocation{Target: c.Env.url, AllowRemote: c.AllowRemote}}
		out, err := r.Run(ctx, s, opts)
		where := fmt.Sprintf("step %d/%d (%s, seed %d", i+1, len(c.Steps), s.Name, seed)
		if out != nil && out.Mutant != "" {
			where += ", mutant " + out.Mutant
		}
		where += ")"
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if judgeStep(t, where, st, out) && !c.NoInvestigate && st.ExpectViolation == "" && st.Check == nil {
			if msg := describeInvestigation(r.Investigate(ctx, out, opts, c.Investigate)); msg != "" {
				t.Errorf("%s: %s", where, msg)
			}
		}
	}
}

// describeInvestigation says what the follow-up of a failure found, or "".
func describeInvestigation(inv Investigation) string {
	var b strings.Builder
	if inv.Repro != "" {
		b.WriteString(inv.Repro)
	}
	if sr := inv.Shrunk; sr != nil {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "shrunk from %d to %d intents in %d runs, still violating %s:\n%s", sr.From, len(sr.Plan.Intents), sr.Runs, inv.Invariant, sr.Plan.Describe())
		if inv.PlanPath != "" {
			fmt.Fprintf(&b, "saved: %s", inv.PlanPath)
		}
	}
	return b.String()
}

// judgeStep fails t when the step's outcome is not what it expected, and
// says whether it did.
func judgeStep(t TB, where string, st Step, out *Outcome) (failed bool) {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		failed = true
		t.Errorf(format, args...)
	}
	replay := replayHint(out)
	result := out.Steps[len(out.Steps)-1].Result
	if st.Check != nil {
		result = st.Check.Check(out.History, out.History.Effects)
	}
	switch {
	case st.ExpectViolation != "":
		// Each violation is reported under the first step that saw it,
		// which need not be the last.
		seen := st.Check != nil && violated(result, st.ExpectViolation)
		for _, so := range out.Steps {
			seen = seen || (st.Check == nil && violated(so.Result, st.ExpectViolation))
		}
		if !seen {
			errorf("%s: expected a %s violation, saw none (verdict %s, %d requests)\n%s", where, st.ExpectViolation, result.Verdict, out.Requests, replay)
		}
	case st.Check != nil:
		if result.Verdict != checkers.Pass {
			errorf("%s: %s\n%s", where, strings.Join(result.Failures(), "\n"), replay)
		}
	default:
		for _, so := range out.Steps {
			if !so.Met {
				errorf("%s: step %q expected %s, got %s:\n%s\n%s", where, so.Name, so.Expect, so.Result.Verdict,
					strings.Join(so.Result.Failures(), "\n"), replay)
			}
		}
	}
	return failed
}

func replayHint(out *Outcome) string {
	return fmt.Sprintf("history: %s\nreplay: %s", out.HistoryPath, out.ReplayCommand())
}

// validate checks the whole case before anything starts; errors say which
// step ("step 2/3: ...").
// openCase opens the environment of a case's steps (loaded, which it
// retargets in place) for t, its histories under t's directory, and closes
// it when t ends. It says false when t was failed or skipped instead.
func openCase(t TB, e EnvSpec, allowRemote bool, loaded []*scenarios.Scenario) (*Runner, bool) {
	t.Helper()
	// ExternalEnv's URL is the target, as --target is the command's: an
	// effects.url on the scenario's own origin moves with it.
	for i := range loaded {
		loaded[i] = retargeted(loaded[i], e.url)
	}
	r, closeEnv, err := Open(context.Background(), OpenOptions{Kind: e.kind, TargetURL: e.url, Scenarios: loaded, AllowRemote: allowRemote})
	if errors.Is(err, env.ErrNoEnvironment) {
		t.Skipf("harness: %v", err)
		return nil, false
	}
	if err != nil {
		t.Fatalf("harness: %v", err)
		return nil, false
	}
	t.Cleanup(func() { _ = closeEnv(context.Background()) })
	r.HistoryDir = historyDir(t)
	return r, true
}

func (c Case) validate() ([]*scenarios.Scenario, error) {
	if len(c.Steps) == 0 {
		return nil, errors.New("harness: a case needs at least one step")
	}
	var errs []error
	loaded := make([]*scenarios.Scenario, len(c.Steps))
	for i, st := range c.Steps {
		at := fmt.Sprintf("step %d/%d", i+1, len(c.Steps))
		switch {
		case st.Scenario != "" && st.Inline != nil:
			errs = append(errs, fmt.Errorf("%s: set Scenario or Inline, not both", at))
			continue
		case st.Scenario != "":
			s, err := scenarios.Load(st.Scenario)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			loaded[i] = s
		case st.Inline != nil:
			loaded[i] = st.Inline
		case i == 0:
			errs = append(errs, fmt.Errorf("%s: the first step must name a Scenario or an Inline scenario", at))
			continue
		default:
			loaded[i] = loaded[i-1]
		}
		if _, err := lookupMutant(st.Mutant); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
		}
		if st.Mutant != "" && loaded[i] != nil && loaded[i].Target.Reference == nil {
			errs = append(errs, fmt.Errorf("%s: a mutant needs a reference target", at))
		}
		if st.ExpectViolation != "" {
			if _, err := checkers.ByName(st.ExpectViolation); err != nil {
				errs = append(errs, fmt.Errorf("%s: ExpectViolation: %w", at, err))
			}
		}
	}
	return loaded, errors.Join(errs...)
}

// historyDir is where a case's histories go: a directory of this test's
// own under the temp dir (named for it), kept and printed when the test
// failed, so the failure's history can be read afterwards, removed when it
// passed. No other test's directory is ever touched.
func historyDir(t TB) string {
	dir, err := os.MkdirTemp("", "idemchaos-histories-"+testDirName(t.Name())+"-")
	if err != nil {
		return os.TempDir()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("idemchaos: this test's histories are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// testDirName makes a test's name (subtests included) a short, safe part
// of a directory name.
func testDirName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

package harness_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/harness"
)

// fakeTB records what a case reports, so the harness can test its own
// failure paths: a case that should fail must fail.
type fakeTB struct {
	mu      sync.Mutex
	errors  []string
	fatal   bool
	skipped bool
	cleanup []func()
	// cleaning makes Failed false while cleanups run, so the harness
	// removes the histories of these deliberately failing cases.
	cleaning bool
}

var (
	_ harness.TB = (*fakeTB)(nil)
	// Every TB is a testify TestingT: tests state expectations about a case
	// with require/assert on the TB the case reports to.
	_ require.TestingT = harness.TB(nil)
	_ assert.TestingT  = harness.TB(nil)
)

func (f *fakeTB) Helper()             {}
func (f *fakeTB) Name() string        { return "fake" }
func (f *fakeTB) Logf(string, ...any) {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) { f.Errorf(format, args...); f.fatal = true }
func (f *fakeTB) FailNow()                          { f.fatal = true }
func (f *fakeTB) Skipf(string, ...any)              { f.skipped = true }
func (f *fakeTB) Failed() bool                      { return len(f.errors) > 0 && !f.cleaning }
func (f *fakeTB) Cleanup(fn func())                 { f.cleanup = append(f.cleanup, fn) }
func (f *fakeTB) done() {
	f.cleaning = true
	for i := len(f.cleanup) - 1; i >= 0; i-- {
		f.cleanup[i]()
	}
}

func TestCase_ValidatesEverythingBeforeStarting(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		c    harness.Case
		want []string
	}{
		"no steps": {harness.Case{}, []string{"at least one step"}},
		"first step names nothing": {harness.Case{Steps: []harness.Step{{Mutant: "no-key"}}},
			[]string{"step 1/1: the first step must name a Scenario"}},
		"unknown mutant and invariant": {harness.Case{Steps: []harness.Step{
			{Scenario: "../scenarios/key-reuse.yaml"},
			{Mutant: "no-keys"},
			{ExpectViolation: "exactly-one"},
		}}, []string{`step 2/3: unknown mutant "no-keys"`, `step 3/3: ExpectViolation`}},
		"bad scenario file": {harness.Case{Steps: []harness.Step{{Scenario: "../testdata/bad-yaml/unknown-key.yaml"}}},
			[]string{"step 1/1:", `did you mean "concurrency"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tb := &fakeTB{}
			harness.Test(tb, tc.c)
			tb.done()
			require.True(t, tb.fatal, "an invalid case did not fail: %v", tb.errors)
			got := strings.Join(tb.errors, "\n")
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
		})
	}
}

func TestCase_ExpectViolationFailsWhenNoneIsSeen(t *testing.T) {
	tb := &fakeTB{}
	harness.Test(tb, harness.Case{Env: harness.LocalEnv(), Steps: []harness.Step{
		{Scenario: "../scenarios/key-reuse.yaml", ExpectViolation: "reuse-rejected"},
	}})
	tb.done()
	got := strings.Join(tb.errors, "\n")
	// The correct reference cannot violate reuse-rejected, so the step must
	// fail with the replay command.
	assert.Contains(t, got, "expected a reuse-rejected violation, saw none")
	assert.Contains(t, got, "replay: idemchaos run -s ../scenarios/key-reuse.yaml --seed 1")
}

func TestCase_CleanExpectationFailsOnAMutant(t *testing.T) {
	tb := &fakeTB{}
	harness.Test(tb, harness.Case{Env: harness.LocalEnv(), NoInvestigate: true, Steps: []harness.Step{
		{Scenario: "../scenarios/key-reuse.yaml", Mutant: "no-fingerprint"},
	}})
	tb.done()
	got := strings.Join(tb.errors, "\n")
	// A mutant must fail a step that expects clean, naming the invariant
	// and the replay.
	assert.Contains(t, got, "reuse-rejected")
	assert.Contains(t, got, "--mutant no-fingerprint")
	assert.NotContains(t, got, "runs of the same plan", "NoInvestigate still re-ran")
	assert.NotContains(t, got, "shrunk", "NoInvestigate still shrank")
}

// A failing step is followed up the way run follows one up: re-run to
// classify it, then shrunk, and the failure says what that found.
func TestCase_FailureIsClassifiedAndShrunk(t *testing.T) {
	tb := &fakeTB{}
	harness.Test(tb, harness.Case{Env: harness.LocalEnv(),
		Investigate: harness.InvestigateOptions{Reruns: 1, Budget: harness.ShrinkBudget{Runs: 8}},
		Steps:       []harness.Step{{Scenario: "../scenarios/key-reuse.yaml", Mutant: "no-fingerprint"}}})
	tb.done()
	got := strings.Join(tb.errors, "\n")
	assert.Contains(t, got, "reproducible (2/2 runs of the same plan failed)", "no classification of a deterministic failure")
	assert.Contains(t, got, "shrunk from ", "no shrunk plan")
	assert.Contains(t, got, "still violating reuse-rejected", "no shrunk plan")
}

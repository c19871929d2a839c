package harness

import (
	"testing"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/scenarios"
)

// A fault that spans attempts is aimed at each of them, whatever its kind:
// the plan reads the span from the fault, never from its name.
func TestGeneratePlan_AimsEverySpannedAttempt(t *testing.T) {
	t.Parallel()
	s := &scenarios.Scenario{Name: "span", Endpoint: scenarios.Endpoint{Method: "POST", Path: "/x", Body: "{}"},
		Traffic: scenarios.Traffic{Intents: 3, Concurrency: 1}}
	fs := []builtFault{{spec: scenarios.FaultSpec{Kind: "retention-expiry", When: scenarios.When{Attempt: 2, Nth: 1}},
		fault: &faults.RetentionExpiry{}, aimed: true, attempts: 3}}
	p := generatePlan(7, s.Traffic, requestOf(s), fs, []string{"t1"}, "", "")
	for _, in := range p.Intents {
		for _, a := range []int{2, 3, 4} {
			if in.Faults[a] != "retention-expiry#0" {
				t.Fatalf("intent %s: attempt %d carries %q, want the fault (faults %v)", in.ID, a, in.Faults[a], in.Faults)
			}
		}
		if _, ok := in.Faults[1]; ok || len(in.Faults) != 3 {
			t.Fatalf("intent %s: faults %v, want attempts 2..4 only", in.ID, in.Faults)
		}
	}
}

// A plan made without faults (callbacks, a resend) takes a step's faults
// whatever they are, none included.
func TestWithFaults_NoneAndNth(t *testing.T) {
	t.Parallel()
	p := Plan{Seed: 3, Intents: make([]driver.Intent, 4)}
	if got := withFaults(p, nil); len(got.Intents) != 4 || len(got.Timed) != 0 {
		t.Fatalf("no faults: %+v", got)
	}
	f, err := faults.New("double-click")
	if err != nil || f.Validate() != nil {
		t.Fatal(err)
	}
	got := withFaults(p, []builtFault{newBuiltFault(scenarios.FaultSpec{Kind: "double-click", When: scenarios.When{Nth: 2}}, f)})
	for i, in := range got.Intents {
		if want := map[bool]int{true: 2, false: 0}[(i+1)%2 == 0]; in.Clicks != want {
			t.Errorf("intent %d: %d clicks, want %d", i+1, in.Clicks, want)
		}
	}
}

// A double click with together set plans its copies to be sent together
// (the driver's gate), with no spread.
func TestWithFaults_DoubleClickTogether(t *testing.T) {
	t.Parallel()
	p := Plan{Seed: 3, Intents: make([]driver.Intent, 2)}
	f := &faults.DoubleClick{Copies: 3, Together: true}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	got := withFaults(p, []builtFault{newBuiltFault(scenarios.FaultSpec{Kind: "double-click", When: scenarios.When{Nth: 1}}, f)})
	for _, in := range got.Intents {
		if in.Clicks != 3 || !in.Together || in.Spread != 0 {
			t.Fatalf("intent planned with clicks %d, together %v, spread %s; want 3, true, 0", in.Clicks, in.Together, in.Spread)
		}
	}
}

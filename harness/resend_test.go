package harness_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// A resend step applies the faults it lists: a burst of triple clicks on
// every resent intent sends three requests per intent, and the history
// shows the extra copies fired. Before, the resend dropped its faults and
// sent one request per intent.
func TestRun_ResendStepAppliesItsFaults(t *testing.T) {
	t.Parallel()
	const yaml = `
target: {reference: {}}
steps:
  - name: first
    traffic: {intents: 4, concurrency: 4}
    faults: []
  - name: burst
    resend: true
    faults:
      - kind: double-click
        params: {copies: 3}
        when: {fraction: 1}
`
	s, err := scenarios.Parse("resend.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := harness.Plans(s, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range plans[1].Intents {
		if in.Clicks != 3 {
			t.Fatalf("resent intent %s planned with %d clicks, want 3", in.ID, in.Clicks)
		}
	}
	o := run(t, yaml, "")
	if len(o.Steps) != 2 {
		t.Fatalf("%d steps ran", len(o.Steps))
	}
	if got := o.Steps[0].Stats.Requests; got != 4 {
		t.Errorf("first step sent %d requests, want 4", got)
	}
	if got := o.Steps[1].Stats.Requests; got != 12 {
		t.Errorf("resend step sent %d requests, want 12 (4 intents × 3 copies)", got)
	}
	if fired := len(faultEvents(o.History, "double-click", "fire")); fired != 8 {
		t.Errorf("double-click fired %d times, want 8 (2 extra copies × 4 intents)", fired)
	}
	for _, st := range o.Steps {
		if !st.Met {
			t.Errorf("step %s: %s", st.Name, st.Result.Reason)
		}
	}
}

package harness_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// webhookYAML is orders, then the provider's signed events for them:
// every treatment on, two forged events.
const webhookYAML = `
target: {reference: {}}
steps:
  - name: orders
    traffic: {intents: 6, concurrency: 6}
    faults: []
  - name: provider events
    webhook: {duplicates: 0.5, late: 0.5, out_of_order: 0.5, after_500: 0.3, timeouts: 0.3, forged: 2}
invariants:
  - exactly-once
  - forward-only
  - forged-refused
`

// deliveries counts what the history says the provider did: attempts of
// its events, the retries after a 500 or a timeout, the concurrent and
// late copies, and the forged events.
type deliveries struct{ made, retriedAfter500, retriedAfterTimeout, concurrent, late, forged int }

func countDeliveries(h *history.History) deliveries {
	var d deliveries
	forged := map[int64]bool{}
	for _, f := range h.Faults {
		if f.Kind == checkers.FaultForgedSignature {
			forged[f.Op] = true
			d.forged++
		}
	}
	byIntent := map[string][]history.Attempt{}
	for _, a := range h.Attempts {
		if a.Tenant != "provider" {
			continue
		}
		d.made++
		byIntent[a.Intent] = append(byIntent[a.Intent], a)
	}
	for _, as := range byIntent {
		firsts := 0
		for i, a := range as {
			if a.Number == 1 {
				firsts++
			}
			if a.Number < 2 {
				continue
			}
			// The attempt this one retries: its chain's previous number, the
			// latest such before it (a late copy or the other click may have
			// been recorded in between).
			var prev *history.Attempt
			for j := range as[:i] {
				if b := &as[j]; b.Number == a.Number-1 && b.Client == a.Client && b.Invoke <= a.Invoke && (prev == nil || b.Invoke > prev.Invoke) {
					prev = b
				}
			}
			switch {
			case prev == nil:
			case prev.Outcome == history.OK && prev.Status == 500:
				d.retriedAfter500++
			case prev.Outcome == history.Info:
				d.retriedAfterTimeout++
			}
		}
		if firsts == 2 && as[0].Invoke == as[1].Invoke || firsts >= 2 && as[1].Invoke-as[0].Invoke < 5e6 {
			d.concurrent++
		}
		// Late: a first delivery sent after an earlier one was answered 2xx.
		late := false
		for _, a := range as {
			for _, b := range as {
				late = late || a.Number == 1 && b.Outcome == history.OK && b.Status/100 == 2 && b.Complete > 0 && a.Invoke > b.Complete
			}
		}
		if late {
			d.late++
		}
	}
	return d
}

// The reference verifies its provider's signature, deduplicates by
// provider transaction and moves orders forward only: the webhook step is
// clean, and the history shows every treatment really happened.
func TestRun_WebhookStepAgainstTheReference(t *testing.T) {
	t.Parallel()
	o := run(t, webhookYAML, "")
	for _, st := range o.Steps {
		if !st.Met {
			t.Errorf("step %s not met: %s", st.Name, strings.Join(st.Result.Failures(), "\n"))
		}
	}
	d := countDeliveries(o.History)
	t.Logf("deliveries %+v", d)
	if d.made < 12 || d.retriedAfter500 == 0 || d.retriedAfterTimeout == 0 || d.concurrent == 0 || d.late == 0 || d.forged != 2 {
		t.Errorf("deliveries %+v: want every treatment to have happened (12+ deliveries, retries after a 500 and after a timeout, concurrent and late copies, 2 forged); %d gateway-5xx fired", d, len(faultEvents(o.History, "gateway-5xx", "fire")))
		for _, a := range o.History.Attempts {
			if a.Tenant == "provider" {
				t.Logf("%s #%d client %d invoke %.1fms complete %.1fms: %s %d", a.Intent, a.Number, a.Client, float64(a.Invoke)/1e6, float64(a.Complete)/1e6, a.Outcome, a.Status)
			}
		}
	}
	// A 500 answered to one of two concurrent copies needs no retry: the
	// other copy's 2xx ends the event.
	if fired := len(faultEvents(o.History, "gateway-5xx", "fire")); fired < d.retriedAfter500 {
		t.Errorf("%d 500s fired, %d retried after", fired, d.retriedAfter500)
	}
	states := 0
	for _, e := range o.History.Effects {
		if e.State != "" {
			states++
		}
	}
	if states == 0 || len(o.History.Transitions) == 0 {
		t.Errorf("%d order states read, %d transitions recorded: forward-only judged nothing", states, len(o.History.Transitions))
	}
}

// callback-accumulates credits every delivery: the provider's duplicates
// pay twice, and exactly-once says so in the webhook step.
func TestRun_WebhookStepCatchesCallbackAccumulates(t *testing.T) {
	t.Parallel()
	o := run(t, webhookYAML, "callback-accumulates")
	st := o.Steps[1]
	if st.Result.Verdict != checkers.Violated {
		t.Fatalf("webhook step: %s, want a violation", st.Result.Verdict)
	}
	found := false
	for _, p := range st.Result.Results {
		found = found || p.Name == "exactly-once" && p.Verdict == checkers.Violated && strings.Contains(strings.Join(p.Failures(), " "), "payment-credit")
	}
	if !found {
		t.Fatalf("no exactly-once violation on payment credits:\n%s", strings.Join(st.Result.Failures(), "\n"))
	}
}

package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// One local environment (with a standby) serves every test of this file.
var (
	envOnce   sync.Once
	envRunner *harness.Runner
	envErr    error
)

func runner(t *testing.T) *harness.Runner {
	t.Helper()
	envOnce.Do(func() {
		var closeEnv func(context.Context) error
		envRunner, closeEnv, envErr = harness.Open(context.Background(), harness.OpenOptions{Standby: true})
		if envErr == nil {
			cleanups = append(cleanups, func() { _ = closeEnv(context.Background()) })
		}
	})
	if envErr != nil {
		t.Fatalf("local environment: %v", envErr)
	}
	r := *envRunner
	r.HistoryDir = t.TempDir()
	return &r
}

var cleanups []func()

func run(t *testing.T, yaml, mutant string) *harness.Outcome {
	t.Helper()
	s, err := scenarios.Parse(t.Name()+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	o, err := runner(t).Run(context.Background(), s, harness.RunOptions{Seed: 7, Mutant: mutant})
	if err != nil {
		t.Fatal(err)
	}
	sameOffline(t, o)
	return o
}

// sameOffline asserts the one verdict on a run: its history file, loaded
// and judged as idemchaos check judges it (the meta's contract and
// invariants, checkers.Judge), gives every step the run's verdict, reason
// and expectation met.
func sameOffline(t *testing.T, o *harness.Outcome) {
	t.Helper()
	f, err := os.Open(o.HistoryPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var meta history.Event
	if err := history.NewReader(f).Next(&meta); err != nil {
		t.Fatal(err)
	}
	contract, err := checkers.ContractFromMeta(meta.Contract)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(f, contract.LoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkers.ForContract(contract, meta.Invariants...)
	if err != nil {
		t.Fatal(err)
	}
	j := checkers.Judge(h, c, contract.Options()...)
	if len(j.Steps) != len(o.Steps) {
		t.Fatalf("one verdict: the run judged %d steps, its history %d", len(o.Steps), len(j.Steps))
	}
	for i, st := range o.Steps {
		g := j.Steps[i]
		if g.Expect != st.Expect || g.Met != st.Met || g.Result.Verdict != st.Result.Verdict || g.Result.Reason != st.Result.Reason {
			t.Errorf("one verdict: step %d: run expects %s, met %v, %s %q; its history expects %s, met %v, %s %q",
				i+1, st.Expect, st.Met, st.Result.Verdict, st.Result.Reason, g.Expect, g.Met, g.Result.Verdict, g.Result.Reason)
		}
	}
}

func faultEvents(h *history.History, kind, action string) []history.Fault {
	var out []history.Fault
	for _, f := range h.Faults {
		if f.Kind == kind && f.Action == action {
			out = append(out, f)
		}
	}
	return out
}

func effectsOf(h *history.History, intent, kind string) int {
	n := 0
	for _, e := range h.Effects {
		if e.Intent == intent && e.Kind == kind {
			n++
		}
	}
	return n
}

func attempt(h *history.History, op int64) history.Attempt {
	for _, a := range h.Attempts {
		if a.Op == op {
			return a
		}
	}
	return history.Attempt{}
}

// Each fault kind, against the real reference, does what it says.
func TestFaults_DoWhatTheySay(t *testing.T) {
	t.Run("response-drop: the server executes, the client sees info", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 4, retry: {max_attempts: 1}}
faults: [{kind: response-drop, when: {nth: 2}}]`, "")
		fired := faultEvents(o.History, "response-drop", "fire")
		if len(fired) != 2 {
			t.Fatalf("fired %d times, want 2 (intents 2 and 4)", len(fired))
		}
		for _, f := range fired {
			a := attempt(o.History, f.Op)
			if a.Outcome != history.Info || effectsOf(o.History, a.Intent, "order") != 1 {
				t.Fatalf("dropped op %d: outcome %s, %d orders; want info and 1", f.Op, a.Outcome, effectsOf(o.History, a.Intent, "order"))
			}
		}
		for _, a := range o.History.Attempts {
			if a.Intent == "i1" && a.Outcome != history.OK {
				t.Fatalf("an un-aimed attempt was hit: %+v", a)
			}
		}
	})
	t.Run("gateway-5xx: executed, answered 504", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 2, retry: {max_attempts: 1}}
faults: [{kind: gateway-5xx, when: {nth: 1}}]`, "")
		for _, a := range o.History.Attempts {
			if a.Status != 504 || effectsOf(o.History, a.Intent, "order") != 1 {
				t.Fatalf("op %d: status %d, %d orders; want 504 and 1", a.Op, a.Status, effectsOf(o.History, a.Intent, "order"))
			}
		}
	})
	t.Run("rate-limit: 429 with Retry-After, not forwarded", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 1, retry: {max_attempts: 1}}
faults: [{kind: rate-limit, params: {retry_after: 2s}, when: {nth: 1}}]`, "")
		a := o.History.Attempts[0]
		if ra, _ := a.RespHeaders.Get("Retry-After"); a.Status != 429 || ra != "2" || len(o.History.Effects) != 0 {
			t.Fatalf("status %d, Retry-After %q, %d effects; want 429, 2, none", a.Status, ra, len(o.History.Effects))
		}
	})
	t.Run("double-click: copies with one key, one order", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 1}
faults: [{kind: double-click, params: {copies: 3, spread: 2ms}, when: {fraction: 1}}]`, "")
		first := 0
		for _, a := range o.History.Attempts {
			if a.Number == 1 {
				first++
			}
		}
		if first != 3 || effectsOf(o.History, "i1", "order") != 1 || len(faultEvents(o.History, "double-click", "fire")) != 2 {
			t.Fatalf("%d first attempts, %d orders; want 3 copies and 1 order", first, effectsOf(o.History, "i1", "order"))
		}
	})
	t.Run("latency: responses come late", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 2, concurrency: 1}
faults: [{kind: latency, params: {latency: 150ms}, when: {at: 0s}}]`, "")
		for _, a := range o.History.Attempts {
			if d := time.Duration(a.Complete - a.Invoke); d < 150*time.Millisecond {
				t.Fatalf("op %d took %s, want ≥ 150ms", a.Op, d)
			}
		}
	})
	t.Run("slow-db: every request waits on the database", func(t *testing.T) {
		o := run(t, `target: {reference: {}}
traffic: {intents: 2, concurrency: 1}
faults: [{kind: slow-db, params: {latency: 40ms}, when: {at: 0s}}]`, "")
		for _, a := range o.History.Attempts {
			if d := time.Duration(a.Complete - a.Invoke); d < 80*time.Millisecond {
				t.Fatalf("op %d took %s, want ≥ 2 database round trips of 40ms", a.Op, d)
			}
		}
	})
	t.Run("crash: a real kill mid-request, then a restart", func(t *testing.T) {
		o := run(t, `target: {reference: {lease: 500ms}}
traffic: {intents: 3, concurrency: 1, retry: {max_attempts: 8, max_retry_after: 300ms}}
faults: [{kind: crash, params: {point: after-claim}, when: {at: 0s}}]`, "")
		if len(faultEvents(o.History, "crash", "fire")) != 1 || len(faultEvents(o.History, "crash", "heal")) != 1 {
			t.Fatalf("faults %+v: want one crash and one restart", o.History.Faults)
		}
		if o.History.Attempts[0].Outcome != history.Info {
			t.Fatalf("the first request should have died with the process: %+v", o.History.Attempts[0])
		}
		if !o.Met() {
			t.Fatalf("the correct reference must recover: %v", o.Steps[0].Result.Failures())
		}
	})
	t.Run("crash aimed: the point armed as the attempt leaves, it dies there", func(t *testing.T) {
		o := run(t, `target: {reference: {lease: 500ms}}
traffic: {intents: 4, concurrency: 2, retry: {max_attempts: 8, max_retry_after: 300ms}}
faults: [{kind: crash, params: {point: after-claim}, when: {nth: 2}}]`, "")
		fired := faultEvents(o.History, "crash", "fire")
		if len(fired) == 0 || len(faultEvents(o.History, "crash", "heal")) != len(fired) {
			t.Fatalf("faults %+v: want crashes, each restarted", o.History.Faults)
		}
		for _, f := range fired {
			var d struct {
				AimedAt int64 `json:"aimed_at"`
			}
			if err := json.Unmarshal(f.Detail, &d); err != nil || d.AimedAt == 0 {
				t.Fatalf("crash %s: names no attempt it was aimed at", f.Detail)
			}
			if a := attempt(o.History, d.AimedAt); a.Number != 1 || a.Outcome != history.Info || a.Invoke >= f.NS {
				t.Fatalf("aimed attempt %+v: want a first attempt, sent before the crash and cut by it", a)
			}
		}
		if !o.Met() {
			t.Fatalf("the correct reference must recover: %v", o.Steps[0].Result.Failures())
		}
	})
	t.Run("consumer-restart: killed after the effect, the message comes back", func(t *testing.T) {
		o := run(t, `target: {reference: {consumer: true, visibility_timeout: 300ms}}
traffic: {intents: 2}
faults: [{kind: consumer-restart, when: {at: 0s}}]`, "consumer-no-dedupe")
		if len(faultEvents(o.History, "consumer-restart", "heal")) != 1 {
			t.Fatalf("faults %+v: want one consumer restart", o.History.Faults)
		}
		notes := 0
		for _, e := range o.History.Effects {
			if e.Kind == "notification" {
				notes++
			}
		}
		if notes != 3 {
			t.Fatalf("%d notifications without dedupe, want 3: two orders and one redelivery", notes)
		}
	})
	t.Run("retention-expiry: the retry waits past retention", func(t *testing.T) {
		o := run(t, `target: {reference: {retention: 10s, retry_window: 10s}}
traffic: {intents: 1}
faults: [{kind: retention-expiry, params: {after: 300ms}, when: {fraction: 1}}]`, "")
		as := o.History.Attempts
		if len(as) != 2 || time.Duration(as[1].Invoke-as[0].Complete) < 300*time.Millisecond {
			t.Fatalf("attempts %+v: want a retry held back ≥ 300ms", as)
		}
	})
	t.Run("replica-lag: the standby lags while applied", func(t *testing.T) {
		o := run(t, `target: {reference: {replica: true}}
traffic: {intents: 1}
faults: [{kind: replica-lag, params: {delay: 1s}, when: {at: 0s}}]`, "")
		if len(faultEvents(o.History, "replica-lag", "fire")) != 1 || len(faultEvents(o.History, "replica-lag", "heal")) != 1 {
			t.Fatalf("faults %+v: want lag applied and healed", o.History.Faults)
		}
	})
}

// Each fault kind, in a short plan: the correct reference stays clean and
// the mutant that fault exposes is caught by the matching checker.
func TestFaultKinds_CleanOnReferenceCaughtOnMutant(t *testing.T) {
	latency := `target: {reference: {}}
traffic: {intents: 4, timeout: 300ms, retry: {max_attempts: 6}}
faults: [{kind: latency, params: {latency: 500ms}, when: {at: 0s, for: 400ms}}]
invariants: [exactly-once, replay-identical]`
	cases := []struct {
		fault, scenario, yaml, mutant, invariant string
	}{
		{"response-drop", "../scenarios/response-drop-replay.yaml", "", "no-key", "exactly-once"},
		{"latency", "", latency, "no-key", "exactly-once"},
		{"slow-db", "../scenarios/double-click-exactly-once.yaml", "", "check-then-insert", "exactly-once"},
		{"gateway-5xx", "../scenarios/gateway-504.yaml", "", "no-key", "exactly-once"},
		{"double-click", "../scenarios/double-click-exactly-once.yaml", "", "processing-reexecutes", "in-flight-conflict"},
		// A 429 is "not executed, try later": it exposes no pitfall of its
		// own, so the reference must simply stay clean under it (gateway-504
		// throttles every 4th intent).
		{"rate-limit", "../scenarios/gateway-504.yaml", "", "", ""},
		{"crash", "../scenarios/crash-mid-request.yaml", "", "no-lease", "eventually-decided"},
		{"consumer-restart", "../scenarios/consumer-restart.yaml", "", "consumer-no-dedupe", "exactly-once"},
		{"replica-lag", "../scenarios/replica-lag-lookup.yaml", "", "replica-read", "exactly-once"},
		{"retention-expiry", "../scenarios/retention-window.yaml", "", "short-retention", "exactly-once"},
		{"duplicate-delivery", "../scenarios/duplicate-delivery.yaml", "", "check-then-insert", "exactly-once"},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.fault] = true
	}
	for _, k := range faults.Kinds() {
		// A kind that acts only on a client's path has its case in the
		// client runs' tests (client_test.go).
		if f, _ := faults.New(k); !covered[k] && !faults.IsClientOnly(f) {
			t.Errorf("fault kind %s has no case here: a new kind needs its scenario and the mutant it exposes", k)
		}
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			var s *scenarios.Scenario
			var err error
			if tc.yaml != "" {
				s, err = scenarios.Parse(tc.fault+".yaml", []byte(tc.yaml))
			} else {
				s, err = scenarios.Load(tc.scenario)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := runner(t)
			clean, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 3, Mutant: harness.CorrectService})
			if err != nil {
				t.Fatal(err)
			}
			if !clean.Met() || len(faultEvents(clean.History, tc.fault, "fire")) == 0 {
				t.Fatalf("the correct reference under %s: met %v, fired %d times: %v (history %s)", tc.fault, clean.Met(),
					len(faultEvents(clean.History, tc.fault, "fire")), clean.Steps[0].Result.Failures(), clean.HistoryPath)
			}
			if tc.mutant == "" {
				return
			}
			bad, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 3, Mutant: tc.mutant})
			if err != nil {
				t.Fatal(err)
			}
			caught := false
			for _, inv := range bad.Caught() {
				caught = caught || inv == tc.invariant
			}
			if !caught {
				t.Fatalf("mutant %s under %s: caught by %v, want %s (history %s)", tc.mutant, tc.fault, bad.Caught(), tc.invariant, bad.HistoryPath)
			}
		})
	}
}

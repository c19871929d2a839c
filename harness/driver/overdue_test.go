package driver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// overdueRun runs intents against a server that answers with status,
// calling onRequest (with the run's recorder and the request's number,
// from 1) before each answer.
func overdueRun(t *testing.T, cfg driver.Config, intents []driver.Intent, status int, onRequest func(rec *driver.Recorder, n int64)) (*history.History, time.Duration) {
	t.Helper()
	var buf bytes.Buffer
	rec, err := driver.NewRecorder(history.NewWriter(&buf), t.Name(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if onRequest != nil {
			onRequest(rec, n.Add(1))
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.Recorder = srv.URL, rec
	start := time.Now()
	if _, err := driver.Run(context.Background(), cfg, intents); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	h, err := history.Load(&buf, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h, took
}

const overdueBound = 150 * time.Millisecond

func overdueConfig(settled bool) driver.Config {
	return driver.Config{DecisionBound: overdueBound, Settled: func() bool { return settled },
		Retry: driver.RetryPolicy{MaxAttempts: 1000, Base: 5 * time.Millisecond, Max: 10 * time.Millisecond, Budget: 5 * time.Second}}
}

// eventuallyDecided is the checker's verdict on h with the test's bound.
func eventuallyDecided(h *history.History) checkers.Result {
	return checkers.EventuallyDecided(checkers.WithDecisionBound(overdueBound)).Check(h, h.Effects)
}

// A key answered "in flight" forever, with nothing left to heal, is asked
// until the decision bound has passed since its first attempt, and no
// longer: the checker then proves the violation from the history (not
// "stopped retrying before the bound"), long before the retry budget.
func TestRun_OverdueKeyStopsOnceTheViolationIsProven(t *testing.T) {
	t.Parallel()
	h, took := overdueRun(t, overdueConfig(true), intents(1, "t1"), http.StatusConflict, nil)
	n := len(h.Attempts)
	first, last, prev := h.Attempts[0].Invoke, h.Attempts[n-1].Invoke, h.Attempts[n-2].Invoke
	if time.Duration(last-first) < overdueBound || time.Duration(prev-first) >= overdueBound {
		t.Errorf("attempts at %s and %s after the first; want the last, and only it, past the %s bound",
			time.Duration(prev-first), time.Duration(last-first), overdueBound)
	}
	if took > 2*time.Second {
		t.Errorf("the run took %s; the budget (5s), not the bound, ended it", took)
	}
	if r := eventuallyDecided(h); r.Verdict != checkers.Violated {
		t.Errorf("eventually-decided: %s (%s), want a violation proven by the history", r.Verdict, r.Reason)
	}
}

// While a fault may still heal, nothing is overdue: a heal would restart
// the key's clock, so the budget bounds the retries as before.
func TestRun_OverdueWaitsForTheFaultsToSettle(t *testing.T) {
	t.Parallel()
	cfg := overdueConfig(false)
	cfg.Retry.Budget = 3 * overdueBound
	h, _ := overdueRun(t, cfg, intents(1, "t1"), http.StatusConflict, nil)
	n := len(h.Attempts)
	if span := time.Duration(h.Attempts[n-1].Invoke - h.Attempts[0].Invoke); span < cfg.Retry.Budget {
		t.Errorf("asked for %s; unsettled faults must leave the retries to the %s budget", span, cfg.Retry.Budget)
	}
}

// A heal restarts the key's clock, as it restarts the checker's: the key
// is asked for the bound after the heal, however long it waited before.
func TestRun_OverdueCountsFromTheLatestHeal(t *testing.T) {
	t.Parallel()
	var healed atomic.Int64
	h, took := overdueRun(t, overdueConfig(true), intents(1, "t1"), http.StatusConflict, func(rec *driver.Recorder, n int64) {
		if n == 6 {
			_ = rec.Fault("crash", "heal", 0, nil)
			healed.Store(rec.Now())
		}
	})
	n := len(h.Attempts)
	var after int64 = -1
	for _, a := range h.Attempts {
		if a.Invoke >= healed.Load() {
			after = a.Invoke
			break
		}
	}
	if after < 0 || time.Duration(h.Attempts[n-1].Invoke-after) < overdueBound {
		t.Fatalf("the last attempt came %s after the first one since the heal; want the %s bound",
			time.Duration(h.Attempts[n-1].Invoke-after), overdueBound)
	}
	if r := eventuallyDecided(h); r.Verdict != checkers.Violated {
		t.Errorf("eventually-decided: %s (%s), want a violation", r.Verdict, r.Reason)
	}
	if took > 2*time.Second {
		t.Errorf("the run took %s; the budget (5s), not the bound, ended it", took)
	}
}

// Attempts a fault was aimed at are no evidence to the checker, so they
// do not start the clock either.
func TestRun_OverdueIgnoresAimedAttempts(t *testing.T) {
	t.Parallel()
	in := intents(1, "t1")
	in[0].Faults = map[int]string{1: "gateway-5xx-0", 2: "gateway-5xx-0", 3: "gateway-5xx-0"}
	h, took := overdueRun(t, overdueConfig(true), in, http.StatusConflict, func(rec *driver.Recorder, n int64) {
		if n <= 3 {
			time.Sleep(overdueBound / 2) // slow aimed attempts: their time must not count
		}
	})
	n := len(h.Attempts)
	if span := time.Duration(h.Attempts[n-1].Invoke - h.Attempts[3].Invoke); span < overdueBound {
		t.Errorf("asked for %s after the first unaimed attempt; want the %s bound", span, overdueBound)
	}
	if took > 2*time.Second {
		t.Errorf("the run took %s; the budget (5s), not the bound, ended it", took)
	}
}

// A key another intent shares, a new key per retry, a definite answer, or
// no bound at all: the rule does not apply, and the budget bounds the
// retries as before.
func TestRun_OverdueOnlyForAKeyOfItsOwn(t *testing.T) {
	t.Parallel()
	budget := 3 * overdueBound
	shared := intents(2, "t1")
	shared[1].Key = shared[0].Key
	for name, c := range map[string]struct {
		cfg     func(*driver.Config)
		intents []driver.Intent
		status  int
	}{
		"shared key":      {func(*driver.Config) {}, shared, http.StatusConflict},
		"key per attempt": {func(c *driver.Config) { c.Model = driver.KeyPerAttempt }, intents(1, "t1"), http.StatusConflict},
		"decided":         {func(c *driver.Config) { c.Model = driver.Retry4xx }, intents(1, "t1"), http.StatusUnprocessableEntity},
		"no bound":        {func(c *driver.Config) { c.DecisionBound = 0 }, intents(1, "t1"), http.StatusConflict},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := overdueConfig(true)
			cfg.Retry.Budget = budget
			c.cfg(&cfg)
			h, _ := overdueRun(t, cfg, c.intents, c.status, nil)
			n := len(h.Attempts)
			if span := time.Duration(h.Attempts[n-1].Invoke - h.Attempts[0].Invoke); span < budget {
				t.Errorf("asked for %s; want the %s budget", span, budget)
			}
		})
	}
}

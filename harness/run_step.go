package harness

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
	"github.com/idemchaos/idemchaos/scenarios"
)

// runStep sends one plan with its faults: timed faults on their own clocks,
// aimed faults through the router. Faults that last "until the step ends"
// stay until the returned stop is called — after the effects were read, so
// that a consumer that only reaches its crash point while draining the queue
// still crashes and comes back.
func (r *Runner) runStep(ctx context.Context, w *world, t *target, tr scenarios.Traffic, s *scenarios.Scenario, plan Plan, fs []builtFault) (driver.Stats, func() error, error) {
	fctx, cancelFaults := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(plan.Timed))
	for _, tf := range plan.Timed {
		f := fs[tf.Fault].fault
		// A fault due at the start is in place before the first request:
		// a short step must not slip past it.
		applied := false
		if tf.At <= 0 {
			var err error
			if b, ok := f.(faults.Blocking); ok {
				err = b.Arm(ctx, w)
			} else {
				err, applied = f.Apply(ctx, w), true
			}
			if err != nil {
				cancelFaults()
				wg.Wait()
				return driver.Stats{}, func() error { return nil }, fmt.Errorf("%w: fault %s: %w", ErrSetup, tf.Kind, err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !ctxwait.Sleep(fctx, tf.At) {
				return
			}
			actx := fctx
			if tf.For > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(fctx, tf.For)
				defer cancel()
			}
			if !applied {
				if err := f.Apply(actx, w); err != nil && actx.Err() == nil {
					errs <- fmt.Errorf("fault %s: %w", tf.Kind, err)
					return
				}
			}
			<-actx.Done() // its duration ran out, or the step ended
			if err := f.Heal(context.WithoutCancel(ctx), w); err != nil {
				errs <- fmt.Errorf("heal %s: %w", tf.Kind, err)
			}
		}()
	}
	cfg := driver.Config{
		BaseURL: t.clientURL, Tokens: t.tokens, KeyHeader: s.Endpoint.KeyHeader, Template: requestOf(s).tmpl,
		Concurrency: tr.Concurrency, MaxRequests: tr.MaxRequests, Deadline: tr.Deadline, Timeout: tr.Timeout,
		Model: driver.Model(tr.Client), InFlightStatus: inFlightStatus(s),
		Retry: driver.RetryPolicy{MaxAttempts: tr.Retry.MaxAttempts, Base: tr.Retry.Base, Max: tr.Retry.Max, MaxRetryAfter: tr.Retry.MaxRetryAfter, Budget: tr.Retry.Budget},
		Seed:  plan.Seed, Recorder: w.rec, Router: router{w: w, faults: fs},
		Dial: r.gate().For("the target's proxy").DialContext,
	}
	if s.Target.Reference != nil {
		// The reference stores the intent on its orders, so its effects
		// carry ground truth (another service just ignores the header).
		cfg.IntentHeader = "X-Intent-ID"
	}
	stats, err := driver.Run(ctx, cfg, plan.Intents)
	hctx := context.WithoutCancel(ctx)
	for _, f := range fs {
		if f.aimed {
			_ = f.fault.Heal(hctx, w)
		}
	}
	stop := func() error {
		cancelFaults()
		wg.Wait()
		close(errs)
		var first error
		for e := range errs {
			if first == nil {
				first = fmt.Errorf("%w: %w", ErrSetup, e)
			}
		}
		return first
	}
	return stats, stop, err
}

// router aims the plan's faults at their attempts.
type router struct {
	w      *world
	faults []builtFault
}

func (r router) Route(ctx context.Context, a driver.AttemptInfo) (driver.Route, error) {
	id := a.Fault
	if id == "" && a.Click > 0 {
		for i, f := range r.faults {
			if _, ok := f.fault.(faults.Clicker); ok {
				id = faultID(f.spec.Kind, i)
			}
		}
	}
	if id == "" {
		return driver.Route{}, nil
	}
	i, ok := parseFaultID(id)
	if !ok || i >= len(r.faults) {
		return driver.Route{}, fmt.Errorf("plan names unknown fault %q", id)
	}
	aimed, ok := r.faults[i].fault.(faults.Aimed)
	if !ok {
		return driver.Route{}, nil
	}
	rt, err := aimed.Route(ctx, r.w, faults.Attempt{Op: a.Op, Intent: a.Intent.ID, Tenant: a.Intent.Tenant, Key: a.Key, Number: a.Attempt, Click: a.Click})
	if err != nil {
		// The driver records the op as not sent, with this reason.
		return driver.Route{}, fmt.Errorf("fault %s could not route op %d: %w", r.faults[i].spec.Kind, a.Op, err)
	}
	return driver.Route{BaseURL: rt.BaseURL, Fresh: rt.Fresh, Done: rt.Done}, nil
}

func inFlightStatus(s *scenarios.Scenario) int {
	if p, err := s.Profile(); err == nil && p.InFlight != 0 {
		return p.InFlight
	}
	return 409
}

// checkerFor builds the scenario's invariants and how the history must be
// loaded for them: the headers they name, and every response header a
// replay must repeat (all but the contract's ignore list).
func checkerFor(s *scenarios.Scenario) (checkers.Checker, history.LoadOptions, error) {
	contract, err := s.CheckerContract()
	if err != nil {
		return nil, history.LoadOptions{}, err
	}
	c, err := s.Checker()
	return c, contract.LoadOptions(), err
}

// stepTraffic is the traffic of a step: the loader already merged the
// step's overrides into it.
func stepTraffic(s *scenarios.Scenario, st scenarios.Step) scenarios.Traffic {
	if st.Traffic != nil {
		return *st.Traffic
	}
	return s.Traffic
}

// tenantsOf lists the scenario's tenants: the token map's, else t1..tN.
func tenantsOf(s *scenarios.Scenario) []string {
	if len(s.Endpoint.Tokens) > 0 {
		out := make([]string, 0, len(s.Endpoint.Tokens))
		for tn := range s.Endpoint.Tokens {
			out = append(out, tn)
		}
		sort.Strings(out)
		if n := s.Traffic.Tenants; n > 0 && n < len(out) {
			out = out[:n]
		}
		return out
	}
	// No tokens (the tenant lives in a header, the query, the path or the
	// body): t1..tN, N the most tenants any step asks for.
	n := max(s.Traffic.Tenants, 1)
	for _, st := range s.Steps {
		if st.Traffic != nil {
			n = max(n, st.Traffic.Tenants)
		}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i+1)
	}
	return out
}

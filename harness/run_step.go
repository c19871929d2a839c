package harness

import (
	"context"
	"fmt"
	"sync"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// sendStep sends one step's plan with its faults: timed faults on their own
// clocks, aimed faults through the router. Faults that last "until the step
// ends" stay until the returned stop is called — after the effects were
// read, so that a consumer that only reaches its crash point while draining
// the queue still crashes and comes back.
func sendStep(ctx context.Context, w *world, st *stepPlan, plan Plan) (driver.Stats, func() error, error) {
	fs := st.faults
	fctx, cancelFaults := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(plan.Timed))
	pending := newSettling(len(plan.Timed))
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
		settle := pending.one()
		go func() {
			defer wg.Done()
			defer settle()
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
			if tf.For <= 0 {
				settle() // its heal, if any, comes when the step ends
			}
			<-actx.Done() // its duration ran out, or the step ended
			if err := f.Heal(context.WithoutCancel(ctx), w); err != nil {
				errs <- fmt.Errorf("heal %s: %w", tf.Kind, err)
			}
		}()
	}
	cfg := st.driver
	cfg.BaseURL, cfg.Seed, cfg.Recorder, cfg.Router = w.t.ClientURL, plan.Seed, w.rec, router{w: w, faults: fs}
	cfg.Settled = pending.settled // an overdue key is asked no more once nothing can heal
	if up, ok := w.proxies.(proxy.UpstreamReporter); ok {
		// Only the proxy knows a service behind it refused or did not
		// accept a connection the driver had with the proxy.
		cfg.Upstream = up.Upstream
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
	if a.Intent.Forged && a.Click == 0 {
		// The fact forged-refused judges: this attempt is not the
		// provider's.
		r.w.Record(checkers.FaultForgedSignature, "fire", a.Op, map[string]any{"event": a.Intent.ID, "signed": "with a wrong secret"})
	}
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

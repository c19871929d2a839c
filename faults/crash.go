package faults

import (
	"context"
	"fmt"
	"sync"
	"time"
)

func init() { Register("crash", func() Fault { return &Crash{} }) }

// Crash kills the service with a real SIGKILL at a chosen point of the
// request path (a failpoint, so the death lands mid-request) or at once,
// then restarts it. On an external target the kill and restart are the
// scenario's hook commands.
//
// Timed (when: at), it is armed before the step's first request. Aimed
// (when: fraction or nth, and attempt, as the HTTP faults are), it fires
// on the attempts the plan picks, one crash at a time: the point is armed
// just before the attempt leaves, so that it dies there; a service with
// no points (one killed by its hook) or the point "now" is killed at once
// while the attempt's answer is held back on its way (Hold), so that the
// kill lands with the attempt in flight.
type Crash struct {
	// Point is the failpoint to die at (default "after-business-write-before-commit");
	// "now" kills at once, wherever requests are.
	Point string `yaml:"point" json:"point" jsonschema:"enum=now,enum=before-claim,enum=after-claim,enum=after-business-write-before-commit,enum=after-commit-before-response,enum=after-response-before-commit,enum=callback-after-dedupe"`
	// NoRestart leaves the process dead (default false: it restarts).
	NoRestart bool `yaml:"no_restart" json:"no_restart"`
	// Hold is how long an aimed crash that kills at once holds the aimed
	// attempt's answer back (default 500ms): longer than the kill takes,
	// shorter than the client waits.
	Hold  time.Duration `yaml:"hold" json:"hold"`
	armed bool
	// mu guards the aimed crash under way (busy closes when its process
	// is back, or given up) and stopCtx, which Heal cancels.
	mu      sync.Mutex
	busy    chan struct{}
	stopCtx context.Context
	stop    context.CancelFunc
	_       struct{}
}

var (
	_ Blocking = (*Crash)(nil)
	_ HookUser = (*Crash)(nil)
	_ Aimed    = (*Crash)(nil)
	_ Timeable = (*Crash)(nil)
)

// CanBeTimed implements [Timeable]: at a time (armed before the first
// request when at is 0), or on the attempts the plan picks.
func (*Crash) CanBeTimed() bool { return true }

// Hooks implements [HookUser]: kill, and restart unless it stays dead.
func (f *Crash) Hooks() []string {
	if f.NoRestart {
		return []string{"kill"}
	}
	return []string{"kill", "restart"}
}

// Kind implements [Fault].
func (*Crash) Kind() string { return "crash" }

// Validate implements [Fault].
func (f *Crash) Validate() error {
	if f.Point == "" {
		f.Point = "after-business-write-before-commit"
	}
	switch {
	case f.Hold < 0:
		return invalid(f.Kind(), "hold must be ≥ 0, got %s", f.Hold)
	case f.Hold == 0:
		f.Hold = 500 * time.Millisecond
	}
	return validPoint(f.Kind(), f.Point, servicePoints)
}

// Route implements [Aimed]: the service dies while attempt a is in flight,
// unless a crash is already under way (then a goes its usual way).
func (f *Crash) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	p := w.Process("service")
	if p == nil {
		return Route{}, fmt.Errorf("%s: %w: no service process to kill", f.Kind(), ErrUnsupported)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy != nil {
		select {
		case <-f.busy:
		default:
			return Route{}, nil // one crash at a time
		}
	}
	var rt Route
	now := f.Point == "now" || hookKilled(p)
	if now {
		addr, remove, err := w.PrivatePath(ctx, ServiceLink, Toxic{Name: "crash-hold", Type: "latency", Stream: "downstream",
			Attributes: map[string]any{"latency": f.Hold.Milliseconds(), "jitter": 0}})
		if err != nil {
			return Route{}, err
		}
		rt = Route{BaseURL: "http://" + addr, Fresh: true, Done: func() { _ = remove(context.Background()) }}
	} else if err := arm(ctx, w, f.Kind(), "service", f.Point); err != nil {
		return Route{}, err
	}
	if f.stop == nil {
		f.stopCtx, f.stop = context.WithCancel(context.Background())
	}
	done := make(chan struct{})
	f.busy = done
	point := f.Point
	if now {
		point = "now" // killed at once, its answer held back
	}
	go func() {
		defer close(done)
		// Op 0, as for a timed crash: the death hits whatever was in
		// flight, not the aimed attempt alone.
		if err := killAt(f.stopCtx, w, f.Kind(), "service", point, !f.NoRestart, true, map[string]any{"aimed_at": a.Op}); err != nil {
			w.Record(f.Kind(), "error", 0, map[string]any{"process": "service", "aimed_at": a.Op, "error": err.Error()})
		}
	}()
	return rt, nil
}

// hookKilled says p is killed by a hook: it has no points to arm.
func hookKilled(p Process) bool {
	h, ok := p.(HookKilled)
	return ok && h.HookKilled()
}

// Arm implements [Blocking]: it arms the failpoint.
func (f *Crash) Arm(ctx context.Context, w World) error {
	err := arm(ctx, w, f.Kind(), "service", f.Point)
	f.armed = err == nil
	return err
}

// Apply implements [Fault]: it blocks until the process died and came back.
func (f *Crash) Apply(ctx context.Context, w World) error {
	return killAt(ctx, w, f.Kind(), "service", f.Point, !f.NoRestart, f.armed, nil)
}

// Heal implements [Fault]: an aimed crash under way brings the service
// back first (Heal comes once the step's requests are done, so a point
// armed and not reached yet will not be); then the failpoint is disarmed if
// no request hit it.
func (f *Crash) Heal(ctx context.Context, w World) error {
	f.mu.Lock()
	busy := f.busy
	if f.stop != nil {
		f.stop()
	}
	f.mu.Unlock()
	if busy != nil {
		select {
		case <-busy:
		case <-ctx.Done():
		}
	}
	return disarm(ctx, w, "service", f.Point)
}

// servicePoints are the service's crash points (see reference/failpoint.go),
// as Crash.Point's tag lists them for the schema.
var servicePoints = enumOf(Crash{}, "Point")

// consumerPoints are the queue consumer's crash points.
var consumerPoints = enumOf(ConsumerRestart{}, "Point")

func validPoint(kind, p string, known []string) error {
	for _, k := range known {
		if p == k {
			return nil
		}
	}
	return invalid(kind, "unknown point %q (known: %v)", p, known)
}

// arm arms a crash failpoint; "now" needs nothing armed.
func arm(ctx context.Context, w World, kind, name, point string) error {
	if w.Process(name) == nil {
		return fmt.Errorf("%s: %w: no %s process to kill", kind, ErrUnsupported, name)
	}
	if point == "now" {
		return nil
	}
	if err := w.Failpoint(ctx, name, point, "crash", 1); err != nil {
		return fmt.Errorf("%s: arm %s: %w", kind, point, err)
	}
	return nil
}

// killAt arms a crash failpoint unless armed (or kills at once for "now"),
// waits for the process to die, records the crash (with extra in its
// detail), restarts it and records the heal. A death is recorded and
// undone even if ctx ends with it.
func killAt(ctx context.Context, w World, kind, name, point string, restart, armed bool, extra map[string]any) error {
	p := w.Process(name)
	if p == nil {
		return fmt.Errorf("%s: %w: no %s process to kill", kind, ErrUnsupported, name)
	}
	died := p.Exited()
	if point == "now" {
		if err := p.Kill(ctx); err != nil {
			return fmt.Errorf("%s: kill %s: %w", kind, name, err)
		}
	} else if !armed {
		if err := arm(ctx, w, kind, name, point); err != nil {
			return err
		}
	}
	select {
	case <-died:
	default:
		select {
		case <-died:
		case <-ctx.Done():
			if !diedAtTheEnd(w, name, point, died) {
				return nil // nothing reached the point, and now nothing will
			}
		}
	}
	detail := map[string]any{"process": name, "point": point}
	for k, v := range extra {
		detail[k] = v
	}
	w.Record(kind, "fire", 0, detail)
	if !restart {
		return nil
	}
	// Once it is dead it comes back, even if the step is ending: a dead
	// service or consumer would hide everything that follows.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := p.Restart(rctx); err != nil {
		return fmt.Errorf("%s: restart %s: %w", kind, name, err)
	}
	w.Record(kind, "heal", 0, map[string]any{"process": name, "restart_ms": time.Since(start).Milliseconds()})
	return nil
}

// diedAtTheEnd settles a wait for a crash point that ended with the step:
// the point is turned off, and it says whether the process reached it
// anyway. The step's last answer can be the very one the point kills after
// (after-response-before-commit): the driver has its response, the step
// ends, and the process dies a moment later. Left there, the service would
// stay dead through every later step. A live process answers the disarm
// (the point cannot fire after that); a dying one cannot, and its exit
// shows within [exitShows].
func diedAtTheEnd(w World, name, point string, died <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(context.Background(), exitShows)
	defer cancel()
	if w.Failpoint(ctx, name, point, "off", 0) == nil {
		select {
		case <-died: // it fired between the step's end and the disarm
			return true
		default:
			return false
		}
	}
	select {
	case <-died:
		return true
	case <-ctx.Done():
		return false
	}
}

// exitShows bounds how long a process that did not answer a disarm is
// given for its death to be reaped.
const exitShows = 2 * time.Second

func disarm(ctx context.Context, w World, name, point string) error {
	if point == "now" || w.Process(name) == nil {
		return nil
	}
	_ = w.Failpoint(ctx, name, point, "off", 0)
	return nil
}

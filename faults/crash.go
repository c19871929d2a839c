package faults

import (
	"context"
	"fmt"
	"time"
)

func init() { Register("crash", func() Fault { return &Crash{} }) }

// Crash kills the service with a real SIGKILL at a chosen point of the
// request path (a failpoint, so the death lands mid-request) or at once,
// then restarts it. On an external target the kill and restart are the
// scenario's hook commands.
type Crash struct {
	// Point is the failpoint to die at (default "after-business-write-before-commit");
	// "now" kills at once, wherever requests are.
	Point string `yaml:"point" json:"point" jsonschema:"enum=now,enum=before-claim,enum=after-claim,enum=after-business-write-before-commit,enum=after-commit-before-response,enum=after-response-before-commit,enum=callback-after-dedupe"`
	// NoRestart leaves the process dead (default false: it restarts).
	NoRestart bool `yaml:"no_restart" json:"no_restart"`
	armed     bool
	_         struct{}
}

var (
	_ Blocking = (*Crash)(nil)
	_ HookUser = (*Crash)(nil)
)

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
	return validPoint(f.Kind(), f.Point, servicePoints)
}

// Arm implements [Blocking]: it arms the failpoint.
func (f *Crash) Arm(ctx context.Context, w World) error {
	err := arm(ctx, w, f.Kind(), "service", f.Point)
	f.armed = err == nil
	return err
}

// Apply implements [Fault]: it blocks until the process died and came back.
func (f *Crash) Apply(ctx context.Context, w World) error {
	return killAt(ctx, w, f.Kind(), "service", f.Point, !f.NoRestart, f.armed)
}

// Heal implements [Fault]: it disarms the failpoint if no request hit it.
func (f *Crash) Heal(ctx context.Context, w World) error {
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
// waits for the process to die, records the crash, restarts it and records
// the heal.
func killAt(ctx context.Context, w World, kind, name, point string, restart, armed bool) error {
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
	case <-ctx.Done():
		return nil // nothing reached the point; Heal disarms it
	}
	w.Record(kind, "fire", 0, map[string]any{"process": name, "point": point})
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

func disarm(ctx context.Context, w World, name, point string) error {
	if point == "now" || w.Process(name) == nil {
		return nil
	}
	_ = w.Failpoint(ctx, name, point, "off", 0)
	return nil
}

package faults

import (
	"context"
	"errors"
	"time"

	"github.com/idemchaos/idemchaos/internal/ctxwait"
)

func init() { Register("retention-expiry", func() Fault { return &RetentionExpiry{} }) }

// RetentionExpiry makes a retry arrive late: the aimed intent's first
// attempt loses its response (so the client must retry), and its retry is
// held back for After, with a purge of expired records asked of the service
// just before it goes. A service whose retention is at least the clients'
// retry window still replays; one that purges sooner executes again.
type RetentionExpiry struct {
	// After is how long the retry is held back (default 2s).
	After time.Duration `yaml:"after" json:"after"`
	// NoPurge skips asking the service to purge expired records before the
	// retry (default false).
	NoPurge bool `yaml:"no_purge" json:"no_purge"`
	_       struct{}
}

var (
	_ Aimed    = (*RetentionExpiry)(nil)
	_ Spanning = (*RetentionExpiry)(nil)
	_ HookUser = (*RetentionExpiry)(nil)
)

// Attempts implements [Spanning]: the attempt whose response is lost, and
// the retry that is held back.
func (*RetentionExpiry) Attempts() int { return 2 }

// Hooks implements [HookUser]: the purge before the late retry.
func (f *RetentionExpiry) Hooks() []string {
	if f.NoPurge {
		return nil
	}
	return []string{"purge"}
}

// Kind implements [Fault].
func (*RetentionExpiry) Kind() string { return "retention-expiry" }

// Validate implements [Fault].
func (f *RetentionExpiry) Validate() error {
	if f.After < 0 {
		return invalid(f.Kind(), "after must be ≥ 0, got %s", f.After)
	}
	if f.After == 0 {
		f.After = 2 * time.Second
	}
	return nil
}

// Apply implements [Fault]; it acts through Route.
func (*RetentionExpiry) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*RetentionExpiry) Heal(context.Context, World) error { return nil }

// Route implements [Aimed]: attempt 1 loses its response; later attempts
// wait, then (after a purge) travel clean.
func (f *RetentionExpiry) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	if a.Number <= 1 {
		return dropRoute(ctx, w, f.Kind(), a, 0)
	}
	if !ctxwait.Sleep(ctx, f.After) {
		return Route{}, ctx.Err()
	}
	purged := !f.NoPurge
	if purged {
		if err := w.Purge(ctx); err != nil && !errors.Is(err, ErrUnsupported) {
			return Route{}, err
		} else if err != nil {
			purged = false
		}
	}
	w.Record(f.Kind(), "fire", a.Op, map[string]any{"held_ms": f.After.Milliseconds(), "purged": purged})
	return Route{}, nil
}

// Package ctxwait holds the one wait every part of idemchaos needs: a pause
// that ends early when its context does, so no wait outlives a cancelled run.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends. It reports whether the whole d passed
// (false means the context ended first). A non-positive d returns at once.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

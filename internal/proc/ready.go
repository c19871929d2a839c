package proc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Ready decides when a started process is ready to serve. Build one with
// [HTTPReady], [LineReady] or [FuncReady].
type Ready interface {
	// wait blocks until the incarnation is ready, it exits, or ctx ends.
	wait(ctx context.Context, in *incarnation) error
}

// pollInterval is the pause between readiness probes. It paces polling; it
// never stands in for readiness.
const pollInterval = 10 * time.Millisecond

// funcReady polls a function.
type funcReady func(ctx context.Context) error

func (f funcReady) wait(ctx context.Context, in *incarnation) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if f(ctx) == nil {
			return nil
		}
		select {
		case <-in.exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// FuncReady is ready once f returns nil: it is asked every 10 ms, so f
// should read a signal the process gave (a notification received, a file
// written), not probe a service.
func FuncReady(f func(ctx context.Context) error) Ready { return funcReady(f) }

// HTTPReady is ready once a GET of url answers with a 2xx status.
func HTTPReady(url string) Ready {
	client := &http.Client{Timeout: time.Second}
	return funcReady(func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return errNotReady
		}
		return nil
	})
}

// errNotReady is a non-2xx health answer.
var errNotReady = errors.New("health check not 2xx")

// lineReady waits for a line of output.
type lineReady string

// LineReady is ready once the process writes a line (stdout or stderr)
// containing substr.
func LineReady(substr string) Ready { return lineReady(substr) }

func (l lineReady) wait(ctx context.Context, in *incarnation) error {
	ch := in.watch(func(line string) bool { return strings.Contains(line, string(l)) })
	select {
	case <-ch:
		return nil
	case <-in.outDone:
		// Output ended: the line may have been the process's last words.
		select {
		case <-ch:
			return nil
		default:
		}
		return ErrExited
	case <-ctx.Done():
		return ctx.Err()
	}
}

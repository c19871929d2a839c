package harness

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
	"github.com/idemchaos/idemchaos/reference"
)

// The bounds of the settle a user's service gets by default when a step
// had attempts that timed out: their server-side work may still be
// running, so the effects are read no sooner than one client timeout
// later, within these bounds.
const (
	minDefaultSettle = 100 * time.Millisecond
	maxDefaultSettle = time.Second
	// maxSettleReads bounds the reads that must agree: a service that
	// keeps writing (a consumer that never drains) is read as it stands.
	maxSettleReads = 10
	// maxReferenceQuiesce bounds the wait for the reference's handlers.
	maxReferenceQuiesce = 10 * time.Second
)

// defaultSettle is the settle of a step with timed-out attempts when the
// scenario names none: one client timeout, bounded.
func defaultSettle(clientTimeout time.Duration) time.Duration {
	if clientTimeout <= 0 {
		clientTimeout = 2 * time.Second // the driver's default
	}
	return min(max(clientTimeout, minDefaultSettle), maxDefaultSettle)
}

// settleFor is how long a step waits after its last attempt ended before
// its effects are read: the scenario's effects.settle when it names one
// (asynchronous effects: a queue's consumer), else, when open attempts
// ended info (their work may still be running on the server, on another
// instance, after the client gave up), the default derived from the
// client timeout; 0 when every attempt got an answer (or lost it to a
// response-drop, which lets the service answer first).
func settleFor(named time.Duration, open int64, clientTimeout time.Duration) time.Duration {
	if named > 0 {
		return named
	}
	if open > 0 {
		return defaultSettle(clientTimeout)
	}
	return 0
}

// settleRead reads a user's service's effects once it has quiesced: after
// wait, then again until two consecutive reads agree (at most
// maxSettleReads). It returns the last reading and when the agreeing pair
// began: the settle's end, written into the history by the caller.
func settleRead(ctx context.Context, ora oracle.Oracle, rec *driver.Recorder, wait time.Duration) (oracle.Reading, int64, error) {
	if wait > 0 && !ctxwait.Sleep(ctx, wait) {
		return oracle.Reading{}, 0, context.Cause(ctx)
	}
	// Between reads a fraction of the settle: a late write lands within
	// the order of the client's timeout.
	gap := max(wait/4, 25*time.Millisecond)
	end := rec.Now()
	prev, err := oracle.Read(ctx, ora)
	if err != nil {
		return prev, 0, err
	}
	for range maxSettleReads - 1 {
		if !ctxwait.Sleep(ctx, gap) {
			return prev, 0, context.Cause(ctx)
		}
		at := rec.Now()
		cur, err := oracle.Read(ctx, ora)
		if err != nil {
			return cur, 0, err
		}
		if sameEffects(prev.Effects, cur.Effects) {
			return cur, end, nil
		}
		prev, end = cur, at
	}
	return prev, end, nil
}

// sameEffects reports whether two reads returned the same effects.
func sameEffects(a, b []history.Effect) bool {
	if len(a) != len(b) {
		return false
	}
	ids := func(fx []history.Effect) []string {
		out := make([]string, len(fx))
		for i, e := range fx {
			out[i] = e.Tenant + "\x00" + e.Key + "\x00" + e.ID
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// referenceQuiesce waits until the reference handles no request (its
// in-flight gauge on /metrics, read directly, behind no fault): a handler
// of an attempt the client gave up on still commits its order. It returns
// false when the gauge could not be read (the service is down: nothing of
// it is running), true once it read zero.
func referenceQuiesce(ctx context.Context, client *http.Client, serviceURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, maxReferenceQuiesce)
	defer cancel()
	for {
		n, err := referenceInFlight(ctx, client, serviceURL)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		if !ctxwait.Sleep(ctx, 2*time.Millisecond) {
			return false
		}
	}
}

// referenceInFlight reads the reference's in-flight gauge.
func referenceInFlight(ctx context.Context, client *http.Client, serviceURL string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(serviceURL, "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, reference.InFlightMetric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, err
			}
			return int(f), nil // /metrics itself is not counted
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("GET /metrics: no %s", reference.InFlightMetric)
}

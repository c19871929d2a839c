package bench

import (
	"fmt"
	"net/http"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemchaos/idemchaos/internal/refbench"
)

// runVegeta attacks http://target/v1/orders with vegeta used as a library,
// configured to be comparable with the driver: exactly concurrency workers
// (Workers = MaxWorkers, so vegeta cannot add more), at most concurrency
// kept-alive connections, no pacing (an unbounded rate: each worker sends
// its next request as soon as the previous one answered), the driver's
// request timeout, and response bodies read whole like the driver does.
// The attack is bounded both by d and by maxRequests. It returns the rate
// of 201 answers per second and their count; any other answer or error
// fails the sample, as it does for the driver and wrk.
func runVegeta(target string, concurrency int, d time.Duration, maxRequests uint64) (float64, uint64, error) {
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Authorization", "Bearer tok-t1")
	// A fixed key, as for wrk: the handler does not read it.
	hdr.Set("Idempotency-Key", "bench-key-000001")
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: "http://" + target + "/v1/orders",
		Body: []byte(refbench.Body), Header: hdr})
	atk := vegeta.NewAttacker(vegeta.Workers(uint64(concurrency)), vegeta.MaxWorkers(uint64(concurrency)),
		vegeta.Connections(concurrency), vegeta.MaxConnections(concurrency), vegeta.KeepAlive(true),
		vegeta.Timeout(5*time.Second), vegeta.Redirects(vegeta.NoFollow))
	// Count-bounded as well as time-bounded: stop after maxRequests hits.
	pace := cappedPacer(maxRequests)
	var ok, bad uint64
	var firstErr string
	start := time.Now()
	for res := range atk.Attack(tr, pace, d, "bench") {
		if res.Error == "" && res.Code == http.StatusCreated {
			ok++
			continue
		}
		bad++
		if firstErr == "" {
			firstErr = fmt.Sprintf("status %d %s", res.Code, res.Error)
		}
	}
	elapsed := time.Since(start)
	if bad > 0 {
		return 0, 0, fmt.Errorf("vegeta: %d of %d requests failed (first: %s)", bad, ok+bad, firstErr)
	}
	if ok >= maxRequests {
		return 0, 0, fmt.Errorf("vegeta: reached its request cap (%d) before the deadline", maxRequests)
	}
	return float64(ok) / elapsed.Seconds(), ok, nil
}

// cappedPacer paces nothing (an unbounded rate) and stops after its count.
type cappedPacer uint64

// Pace sends at once, until the cap.
func (c cappedPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= uint64(c)
}

// Rate is unbounded, which vegeta reports as 0.
func (c cappedPacer) Rate(time.Duration) float64 { return 0 }

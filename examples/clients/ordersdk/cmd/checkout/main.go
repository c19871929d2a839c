// Command checkout creates one order through ordersdk, as a team's batch
// job or CLI would: the API's address and token from the environment
// (IDEMCHAOS_URL, IDEMCHAOS_TOKEN, IDEMCHAOS_PATH), the order on stdin (or
// in IDEMCHAOS_BODY). It prints the order's id and exits 0 when the order
// was created, exits 75 (EX_TEMPFAIL) when the outcome is unknown, and 1
// when the API refused it. Its flags switch on one of ordersdk's flaws.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/examples/clients/ordersdk"
)

func main() {
	var f ordersdk.Flaws
	flag.BoolVar(&f.KeyPerAttempt, "key-per-attempt", false, "mint a new key for every attempt")
	flag.BoolVar(&f.KeyFromBody, "key-from-body", false, "derive the key from a hash of the body")
	flag.BoolVar(&f.NoKey, "no-key", false, "send no Idempotency-Key")
	flag.BoolVar(&f.RetryEverything, "retry-everything", false, "retry every non-2xx answer")
	flag.BoolVar(&f.IgnoreRetryAfter, "ignore-retry-after", false, "wait a fixed short backoff, whatever Retry-After says")
	flag.BoolVar(&f.NoJitter, "no-jitter", false, "exponential backoff without jitter")
	flag.BoolVar(&f.StampEachAttempt, "stamp-each-attempt", false, "add the send time to every attempt's body")
	flag.BoolVar(&f.TimeoutIsFailure, "timeout-is-failure", false, "report a timeout or a lost answer as a failure")
	flag.IntVar(&f.Layered, "layered", 0, "wrap the call in a retry loop of its own, this many times")
	attempts := flag.Int("attempts", 4, "attempts per call")
	backoff := flag.Duration("backoff", 50*time.Millisecond, "base backoff")
	timeout := flag.Duration("timeout", 2*time.Second, "timeout of one attempt")
	flag.Parse()

	body := []byte(os.Getenv("IDEMCHAOS_BODY"))
	if len(body) == 0 {
		var err error
		if body, err = io.ReadAll(os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "checkout: read order:", err)
			os.Exit(1)
		}
	}
	c := &ordersdk.Client{
		BaseURL:  os.Getenv("IDEMCHAOS_URL"),
		Path:     os.Getenv("IDEMCHAOS_PATH"),
		Token:    os.Getenv("IDEMCHAOS_TOKEN"),
		Attempts: *attempts,
		Backoff:  *backoff,
		Flaws:    f,
	}
	c.HTTP = ordersdk.DefaultHTTP(*timeout)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, err := c.CreateOrder(ctx, body)
	switch {
	case err == nil:
		fmt.Println(o.ID)
	case errors.Is(err, ordersdk.ErrUnknownOutcome):
		fmt.Fprintln(os.Stderr, "checkout:", err)
		os.Exit(75)
	default:
		fmt.Fprintln(os.Stderr, "checkout:", err)
		os.Exit(1)
	}
}

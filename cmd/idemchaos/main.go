// Command idemchaos tests idempotent write APIs under faults: it drives
// retrying client traffic, records a history and checks invariants over it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
	"github.com/idemchaos/idemchaos/harness"
	// The docker environment (--env docker) registers itself; only the
	// command links the Docker SDK, never a user's test of the harness.
	_ "github.com/idemchaos/idemchaos/harness/docker"
)

func main() {
	// A copy of this binary started by the harness serves as the reference
	// service or its consumer.
	harness.MaybeChild()
	bench.MaybeConsumer() // bench's consumers section: its consumer
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	m := NewMain()
	os.Exit(m.Exit(m.Run(ctx, os.Args[1:])))
}

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/reference"
)

// MaybeChild runs the child role named in the environment and exits; in a
// process the harness did not start, it returns at once. Call it first in
// main and in TestMain of every package whose tests start the reference.
func MaybeChild() {
	raw, ok := os.LookupEnv(sut.ChildEnv)
	if !ok {
		return
	}
	os.Exit(runChild(raw))
}

func runChild(raw string) int {
	var spec sut.ChildSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "idemchaos child:", err)
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var err error
	switch spec.Role {
	case "serve":
		err = reference.Serve(ctx, reference.Config{DSN: spec.DSN, ReplicaDSN: spec.ReplicaDSN, Addr: spec.Addr,
			Mutant: spec.Mutant, Retention: spec.Retention, MaxRetryWindow: spec.RetryWindow, Lease: spec.Lease,
			Tokens: spec.Tokens, Failpoints: true, PurgeInterval: time.Hour, DebugAllow: spec.DebugAllow,
			ExecuteKeyless: spec.ExecuteKeyless}, os.Stderr)
	case "pause":
		// Holds a container's network namespace for the docker env's
		// service containers, so that a killed service's address refuses
		// connections at once, as a dead local process's port does.
		<-ctx.Done()
	case "consume":
		err = reference.Consume(ctx, reference.ConsumerConfig{DSN: spec.DSN, Mutant: spec.Mutant, Failpoints: true,
			DebugAddr: spec.Addr, VisibilityTimeout: spec.VisibilityTimeout, PollInterval: spec.PollInterval, DebugAllow: spec.DebugAllow}, os.Stderr)
	default:
		err = fmt.Errorf("unknown child role %q", spec.Role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "idemchaos child:", err)
		return 1
	}
	return 0
}

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/reference"
)

// childEnv turns a copy of this binary, started by the harness, into a
// reference service or consumer. Using the same binary means no second
// build, and works for the idemchaos command and for test binaries alike.
const childEnv = "IDEMCHAOS_CHILD"

// childSpec is the JSON in childEnv. It lists the fields the harness sets
// (the reference's configs carry callbacks, which JSON cannot).
type childSpec struct {
	Role string `json:"role"` // "serve", "consume" or "pause"

	DSN               string            `json:"dsn"`
	ReplicaDSN        string            `json:"replica_dsn,omitempty"`
	Addr              string            `json:"addr"`
	Mutant            string            `json:"mutant,omitempty"`
	Retention         time.Duration     `json:"retention,omitempty"`
	RetryWindow       time.Duration     `json:"retry_window,omitempty"`
	Lease             time.Duration     `json:"lease,omitempty"`
	Tokens            map[string]string `json:"tokens,omitempty"`
	VisibilityTimeout time.Duration     `json:"visibility_timeout,omitempty"`
	PollInterval      time.Duration     `json:"poll_interval,omitempty"`
	// DebugAllow is a container's network, trusted for /debug/.
	DebugAllow []netip.Prefix `json:"debug_allow,omitempty"`
}

// MaybeChild runs the child role named in the environment and exits; in a
// process the harness did not start, it returns at once. Call it first in
// main and in TestMain of every package whose tests start the reference.
func MaybeChild() {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	os.Exit(runChild(raw))
}

func runChild(raw string) int {
	var spec childSpec
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
			Tokens: spec.Tokens, Failpoints: true, PurgeInterval: time.Hour, DebugAllow: spec.DebugAllow}, os.Stderr)
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

func childEnvValue(spec childSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return childEnv + "=" + string(b), nil
}

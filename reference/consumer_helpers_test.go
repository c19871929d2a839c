package reference_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

// consumerRun is an in-process consumer whose debug listener is up before
// it starts consuming, so a test can arm failpoints first.
type consumerRun struct {
	url   string
	start func()
	done  chan error
}

// startConsumer prepares Consume with cfg (failpoints on) under ctx; it
// consumes once start is called.
func startConsumer(t *testing.T, ctx context.Context, cfg reference.ConsumerConfig) *consumerRun {
	t.Helper()
	gate := make(chan struct{})
	ready := make(chan string, 1)
	cfg.Failpoints = true
	cfg.DebugAddr = "127.0.0.1:0"
	cfg.Ready = func(addr string) {
		ready <- addr
		<-gate
	}
	c := &consumerRun{done: make(chan error, 1), start: func() { close(gate) }}
	go func() { c.done <- reference.Consume(ctx, cfg, &syncBuffer{}) }()
	select {
	case addr := <-ready:
		c.url = "http://" + addr
	case err := <-c.done:
		t.Fatalf("consume: %v", err)
	}
	return c
}

// drain runs a consumer until no event is visible.
func drain(t *testing.T, dsn, mutant string) {
	t.Helper()
	if err := reference.Consume(context.Background(), reference.ConsumerConfig{DSN: dsn, Mutant: mutant, ExitWhenIdle: true}, &syncBuffer{}); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

package ctxwait_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/ctxwait"
)

func TestSleep_EndsWithItsContext(t *testing.T) {
	t.Parallel()
	if !ctxwait.Sleep(context.Background(), time.Millisecond) {
		t.Fatal("a short sleep on a live context must complete")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if ctxwait.Sleep(ctx, time.Hour) || time.Since(start) > time.Second {
		t.Fatal("a cancelled context must end the sleep at once")
	}
	if ctxwait.Sleep(ctx, 0) {
		t.Fatal("a zero sleep on a cancelled context reports the cancellation")
	}
}

package broker_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/harness/broker"
)

// A hold lets everything on until paused, holds until resumed, and gives
// up when its hop closes.
func TestRestartHold_HoldsUntilResumeOrClose(t *testing.T) {
	t.Parallel()
	var h broker.RestartHold
	if !h.Wait(nil) {
		t.Fatal("a hold never paused held a connection")
	}
	h.Pause()
	got := make(chan bool)
	go func() { got <- h.Wait(nil) }()
	select {
	case <-got:
		t.Fatal("a paused hold let a connection on")
	default:
	}
	h.Resume()
	if !<-got {
		t.Fatal("a resumed hold gave up on its connection")
	}
	h.Pause()
	done := make(chan struct{})
	close(done)
	if h.Wait(done) {
		t.Fatal("a hold whose hop closed let a connection on")
	}
	h.Resume()
	h.Resume() // a second resume is harmless
}

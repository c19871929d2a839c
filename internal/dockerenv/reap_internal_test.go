package dockerenv

import (
	"errors"
	"fmt"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"
)

// Two commands started at once both reap a dead run's containers: the
// one that loses the race gets the daemon's 409 for each, and a 403 for
// the network those containers still hold. Neither is a failure of the
// command (it exited 3 before); any other refusal still is.
func TestReap_AnotherReaperIsNotAnError(t *testing.T) {
	t.Parallel()
	wrap := func(e *dc.Error) error { return fmt.Errorf("remove: %w", e) }
	busy := wrap(&dc.Error{Status: 409, Message: "removal of container ba7db4efbe43 is already in progress"})
	attached := wrap(&dc.Error{Status: 403, Message: "error while removing network: network idemchaos-6721aa5f id ba2e31bf has active endpoints"})
	for _, c := range []struct {
		err              error
		elsewhere, inUse bool
	}{
		{busy, true, false},
		{attached, false, true},
		{wrap(&dc.Error{Status: 409, Message: "container is paused"}), false, false},
		{wrap(&dc.Error{Status: 500, Message: "removal of container x is already in progress"}), false, false},
		{wrap(&dc.Error{Status: 403, Message: "operation not permitted"}), false, false},
		{errors.New("already in progress"), false, false},
		{nil, false, false},
	} {
		if got := removedElsewhere(c.err); got != c.elsewhere {
			t.Errorf("removedElsewhere(%v) = %v", c.err, got)
		}
		if got := inUse(c.err); got != c.inUse {
			t.Errorf("inUse(%v) = %v", c.err, got)
		}
	}
}

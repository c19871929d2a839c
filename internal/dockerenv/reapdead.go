package dockerenv

import (
	"context"
	"time"
)

// ReapDead reaches the daemon and removes the containers and networks of
// environments whose harness is dead (`idemchaos cleanup`), returning how
// many of each it removed. An unreachable daemon is
// [ErrDaemonUnreachable].
//
// The daemon finishes the requests a SIGKILLed harness had in flight (a
// create, a start) after its death, so a cleanup right after the kill may
// see those containers appear after its first pass: while a pass removes
// something, another follows a second later (five at most).
func ReapDead(ctx context.Context) (containers, networks int, err error) {
	c, err := dial(ctx)
	if err != nil {
		return 0, 0, err
	}
	for pass := 0; pass < 5; pass++ {
		if pass > 0 {
			select {
			case <-ctx.Done():
				return containers, networks, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		cs, ns, err := c.reap(ctx)
		containers, networks = containers+cs, networks+ns
		if err != nil || cs+ns == 0 {
			return containers, networks, err
		}
	}
	return containers, networks, nil
}

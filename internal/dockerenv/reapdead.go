package dockerenv

import "context"

// ReapDead reaches the daemon and removes the containers and networks of
// environments whose harness is dead (`idemchaos cleanup`), returning how
// many of each it removed. An unreachable daemon is
// [ErrDaemonUnreachable].
func ReapDead(ctx context.Context) (containers, networks int, err error) {
	c, err := dial(ctx)
	if err != nil {
		return 0, 0, err
	}
	return c.reap(ctx)
}

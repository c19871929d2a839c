// Package leftover is what the CLI leaves behind and takes away again: the
// scratch directories of commands that write large temporary files (`check
// --partitions`), and the sweep that removes what runs killed outright
// (SIGKILL, a crash, a power cut) left — their run directories (Postgres
// data, partitions, `go build` work directories) and, for `idemchaos
// cleanup`, their Docker containers and networks.
//
// A scratch directory is a run directory of internal/runenv, under its disk
// base (never /dev/shm: a split history is as large as the history), so the
// one reaper that removes a dead run's Postgres clusters removes it too: a
// directory is reaped only when its owner (and every process it held) is
// dead, never one of a live command.
package leftover

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// Scratch is a directory for one command's temporary files, removed by
// [Scratch.Close] or, after a SIGKILL, by the next command's sweep.
type Scratch struct{ run *runenv.Run }

// NewScratch reaps what dead runs left and creates a scratch directory
// under runenv's disk base ($IDEMCHAOS_RUNDIR, else $TMPDIR/idemchaos-<uid>).
func NewScratch(ctx context.Context) (*Scratch, error) {
	r, err := runenv.Open(ctx, runenv.Options{Disk: true})
	if err != nil {
		return nil, fmt.Errorf("scratch directory: %w", err)
	}
	return &Scratch{run: r}, nil
}

// Dir is the directory's absolute path.
func (s *Scratch) Dir() string { return s.run.Dir() }

// Close removes the directory and everything in it.
func (s *Scratch) Close() error { return s.run.Close(context.Background()) }

// Sweep removes the run directories of dead runs, under every base one may
// have gone to, and returns their paths. Every command calls it first, so
// what a SIGKILL left goes at the next run of any kind; it never talks to
// the Docker daemon.
func Sweep(ctx context.Context) ([]string, error) { return runenv.ReapAll(ctx) }

// Cleaned is what [Cleanup] removed.
type Cleaned struct {
	// Dirs are the run directories of dead runs.
	Dirs []string
	// Containers and Networks count what dead docker runs left.
	Containers, Networks int
	// Docker is why the daemon was not swept ("" when it was).
	Docker string
}

// Cleanup is `idemchaos cleanup`: [Sweep], then the containers and
// networks of docker runs whose harness is dead. A daemon that does not
// answer is no error (a machine without Docker has nothing there): Docker
// then says so.
func Cleanup(ctx context.Context) (Cleaned, error) {
	var c Cleaned
	var err error
	if c.Dirs, err = Sweep(ctx); err != nil {
		return c, err
	}
	c.Containers, c.Networks, err = dockerenv.ReapDead(ctx)
	if err != nil {
		if !errors.Is(err, dockerenv.ErrDaemonUnreachable) {
			return c, err
		}
		c.Docker = err.Error()
	}
	return c, nil
}

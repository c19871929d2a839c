package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

var shared struct {
	mu      sync.Mutex
	cluster *pgcluster.Cluster
	err     error
	standby *pgcluster.Standby
	sbErr   error
	sbDone  bool
}

// dbSeq makes database names unique within the test binary.
var dbSeq atomic.Int64

// Main runs the tests, then closes the shared cluster and run directory, and
// exits with the tests' status. It also makes SIGINT/SIGTERM/SIGHUP clean up before
// the binary dies.
func Main(m *testing.M) {
	ctx := context.Background()
	run, err := runenv.Shared(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: open run directory: %v\n", err)
		os.Exit(1)
	}
	stop := run.CloseOnSignal(10 * time.Second)
	code := m.Run()
	stop()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	shared.mu.Lock()
	c := shared.cluster
	shared.mu.Unlock()
	if c != nil {
		_ = c.Close(cctx)
	}
	if err := runenv.CloseShared(cctx); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: cleanup: %v\n", err)
	}
	os.Exit(code)
}

// Primary returns the test binary's shared primary, starting it on first
// use. Tests must not close it. If no Postgres binaries are installed the
// test fails (not skips) with what to install: a broken setup must not pass
// silently.
func Primary(tb testing.TB) *pgcluster.Cluster {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cluster, shared.err = pgcluster.Start(ctx, pgcluster.Config{})
	}
	if shared.err != nil {
		tb.Fatalf("pgtest: start shared Postgres: %v", shared.err)
	}
	return shared.cluster
}

// Standby returns a hot standby of the shared primary with no apply delay,
// starting it on first use. Tests that change its delay should restore it
// with t.Cleanup.
func Standby(tb testing.TB) *pgcluster.Standby {
	tb.Helper()
	c := Primary(tb)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.sbDone {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.standby, shared.sbErr = c.StartStandby(ctx, 0)
		shared.sbDone = true
	}
	if shared.sbErr != nil {
		tb.Fatalf("pgtest: start shared standby: %v", shared.sbErr)
	}
	return shared.standby
}

// nonIdent matches what may not appear in a generated database name.
var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// Database creates a fresh empty database in the shared primary and returns
// its DSN; the test's cleanup drops it (terminating leftover connections).
// The name is derived from the test name, so it can be found in server logs.
func Database(tb testing.TB) string {
	tb.Helper()
	c := Primary(tb)
	name := nonIdent.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("t%d_%s", dbSeq.Add(1), name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil && !errors.Is(err, pgcluster.ErrClosed) {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

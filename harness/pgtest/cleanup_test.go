package pgtest_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/proctest"
)

// envFailing makes TestHelper_FailsAfterStartingPostgres run (in a child
// test binary) instead of skipping.
const envFailing = "IDEMCHAOS_PGTEST_FAILING_HELPER"

// TestHelper_FailsAfterStartingPostgres is not a test of its own: the child
// binary of TestMain_FailedTestStillCleansUp runs it to fail with a live
// cluster.
func TestHelper_FailsAfterStartingPostgres(t *testing.T) {
	if os.Getenv(envFailing) == "" {
		t.Skip("helper for TestMain_FailedTestStillCleansUp")
	}
	c := pgtest.Primary(t)
	pgtest.Database(t)
	fmt.Printf("CLUSTER %s %d\n", c.DataDir(), c.PID())
	t.Fatal("deliberate failure")
}

func TestMain_FailedTestStillCleansUp(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper_FailsAfterStartingPostgres$", "-test.v")
	cmd.Env = append(os.Environ(), envFailing+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dataDir, pid := "", 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "CLUSTER" {
			dataDir = f[1]
			pid, _ = strconv.Atoi(f[2])
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("child test binary ended with %v, want exit 1 (a failed test)", err)
	}
	if dataDir == "" {
		t.Fatal("child never reported its cluster")
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(dataDir))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run directory of the failed test binary survived: %v", err)
	}
	// Main waited for the postmaster; allow the kernel a moment to reap.
	proctest.WaitGone(t, pid, 5*time.Second, fmt.Sprintf("postmaster %d survived the failed test binary", pid))
}

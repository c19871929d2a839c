package runenv_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proctest"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// Environment switches that turn the test binary into a helper process.
const (
	envChild = "IDEMCHAOS_RUNENV_CHILD" // "harness", "holder" or "sleeper"
	envBase  = "IDEMCHAOS_RUNENV_BASE"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "harness":
		childHarness()
	case "holder":
		childHolder()
	case "sleeper":
		// Stands in for a postmaster that outlived its harness: it only has
		// to exist, with its working directory in the data directory.
		select {}
	}
	os.Exit(m.Run())
}

// childHarness opens a run under $IDEMCHAOS_RUNENV_BASE, handles
// SIGINT/SIGTERM, starts a real cluster and prints "READY <run dir> <pid>"
// before blocking until a signal ends it.
func childHarness() {
	ctx := context.Background()
	run, err := runenv.Open(ctx, runenv.Options{Base: os.Getenv(envBase), NoReap: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	run.CloseOnSignal(10 * time.Second)
	c, err := pgcluster.Start(ctx, pgcluster.Config{Run: run})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s %d\n", run.Dir(), c.PID())
	select {}
}

// testBase makes a run base that the database user can traverse (a
// t.TempDir is 0700) and removes it at cleanup.
func testBase(tb testing.TB) string {
	tb.Helper()
	parent := filepath.Dir(runenv.DefaultBase())
	base, err := os.MkdirTemp(parent, "idemchaos-test-")
	if err != nil {
		tb.Fatalf("make base: %v", err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		tb.Fatalf("chmod base: %v", err)
	}
	tb.Cleanup(func() {
		// Whatever a failed test left: stop its servers, free their shared
		// memory, then remove the base.
		_, _ = runenv.KillServers(context.Background(), base)
		_ = os.RemoveAll(base)
	})
	return base
}

// child is a helper harness process and what it reported.
type child struct {
	cmd    *exec.Cmd
	runDir string
	pid    int // the one it reported: the postmaster's, or the held sleep's
}

// startChildHarness re-executes the test binary as a child harness and waits
// for its READY line.
func startChildHarness(tb testing.TB, base string) *child {
	tb.Helper()
	return startChild(tb, "harness", envBase+"="+base)
}

// startChild re-executes the test binary in role with env added, and
// waits for its "READY <run dir> <pid>" line.
func startChild(tb testing.TB, role string, env ...string) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envChild+"="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start child %s: %v", role, err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("read child %s's READY line: %v", role, err)
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || fields[0] != "READY" {
		tb.Fatalf("child %s said %q", role, line)
	}
	pid, err := strconv.Atoi(fields[2])
	if err != nil {
		tb.Fatalf("child %s pid %q: %v", role, fields[2], err)
	}
	return &child{cmd: cmd, runDir: fields[1], pid: pid}
}

// survivors lists processes whose command line or working directory
// mentions dir, and the given PID if it still runs.
func survivors(dir string, pid int) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if proctest.Alive(p) && p == pid {
			found = append(found, fmt.Sprintf("postmaster %d", p))
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p))
		if proctest.Alive(p) && (strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir)) {
			found = append(found, fmt.Sprintf("%d %s", p, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return found
}

// waitNoSurvivors polls (bounded) until nothing of dir runs any more:
// processes killed by a parent-death signal take a moment to go.
func waitNoSurvivors(tb testing.TB, dir string, pid int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s := survivors(dir, pid)
		if len(s) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("processes of %s survive: %v", dir, s)
		}
		<-tick.C
	}
}

// exitSignal is the signal that ended a waited-for process, or 0.
func exitSignal(err error) syscall.Signal {
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

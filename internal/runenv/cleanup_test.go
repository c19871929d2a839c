package runenv_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/idemchaos/idemchaos/internal/proctest"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

func TestRun_SIGKILLedHarnessIsReapedByNextStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := testBase(t)
	c := startChildHarness(t, base)
	if !proctest.Alive(c.pid) {
		t.Fatalf("postmaster %d not running after READY", c.pid)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL child: %v", err)
	}
	if err := c.cmd.Wait(); exitSignal(err) != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", err)
	}
	if _, err := os.Stat(filepath.Join(c.runDir, runenv.MarkerName)); err != nil {
		t.Fatalf("a SIGKILLed harness cannot clean up, yet its run dir is gone: %v", err)
	}

	next, err := runenv.Open(ctx, runenv.Options{Base: base})
	if err != nil {
		t.Fatalf("next start: %v", err)
	}
	defer next.Close(ctx)
	if _, err := os.Stat(c.runDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale run dir %s not reaped: %v", c.runDir, err)
	}
	waitNoSurvivors(t, c.runDir, c.pid)
	if _, err := os.Stat(next.Dir()); err != nil {
		t.Fatalf("next run's own dir: %v", err)
	}
}

func TestRun_SignalCleansUp(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			base := testBase(t)
			c := startChildHarness(t, base)
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatalf("signal child: %v", err)
			}
			if err := c.cmd.Wait(); exitSignal(err) != sig {
				t.Fatalf("child ended with %v, want death by %v after cleanup", err, sig)
			}
			if _, err := os.Stat(c.runDir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("run dir %s left behind: %v", c.runDir, err)
			}
			// The child waited for its postmaster before dying, so this
			// only has to let the kernel finish reaping.
			waitNoSurvivors(t, c.runDir, c.pid)
		})
	}
}

func TestReap_KillsServerStillRunningFromStaleDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := testBase(t)
	// A stale run: marker present, nobody holds its lock, and a "postmaster"
	// (a sleeping helper in its own process group) still runs in its data
	// directory, as one would whose parent-death signal never came.
	dir := filepath.Join(base, "run-stale")
	dataDir := filepath.Join(dir, "p1", "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runenv.MarkerName), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command(os.Args[0], "-test.run=^$")
	sleeper.Env = append(os.Environ(), envChild+"=sleeper")
	sleeper.Dir = dataDir
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	pidFile := []byte(strconv.Itoa(sleeper.Process.Pid) + "\n" + dataDir + "\n0\n5432\n/tmp\n127.0.0.1\n  5432001  -1\nready\n")
	if err := os.WriteFile(filepath.Join(dataDir, "postmaster.pid"), pidFile, 0o600); err != nil {
		t.Fatal(err)
	}
	// A live run and a foreign directory must both survive.
	live, err := runenv.Open(ctx, runenv.Options{Base: base, NoReap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	foreign := filepath.Join(base, "not-ours")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}

	reaped, err := runenv.Reap(ctx, base)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if !slices.Equal(reaped, []string{dir}) {
		t.Fatalf("reaped %v, want only %s", reaped, dir)
	}
	if err := <-waited; exitSignal(err) != syscall.SIGKILL {
		t.Fatalf("leftover server ended with %v, want SIGKILL", err)
	}
	for _, keep := range []string{live.Dir(), foreign} {
		if _, err := os.Stat(keep); err != nil {
			t.Fatalf("%s was touched: %v", keep, err)
		}
	}
}

func TestRun_CloseRunsClosersAndRemovesDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := runenv.Open(ctx, runenv.Options{Base: testBase(t)})
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	r.OnClose(func(context.Context) error { order = append(order, 1); return nil })
	unregister := r.OnClose(func(context.Context) error { order = append(order, 2); return nil })
	r.OnClose(func(context.Context) error { order = append(order, 3); return nil })
	unregister()
	sub, err := r.NewDir("x", -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !slices.Equal(order, []int{3, 1}) {
		t.Fatalf("closers ran as %v, want [3 1]", order)
	}
	if _, err := os.Stat(sub); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("subdir survived Close: %v", err)
	}
	if _, err := r.NewDir("y", -1, -1); !errors.Is(err, runenv.ErrClosed) {
		t.Fatalf("NewDir after Close: %v, want ErrClosed", err)
	}
}

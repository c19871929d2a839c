package runenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/proctest"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// childHolder opens a disk run (under $TMPDIR, as `check --partitions`
// and `images build` do), writes a file into it and starts a shell the
// run holds, which starts a background sleep of its own (as `go build`
// starts compilers) and exits only when killed. It prints "READY <run dir>
// <sleep pid>" and blocks.
func childHolder() {
	run, err := runenv.Open(context.Background(), runenv.Options{Disk: true, NoReap: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(run.Dir(), "part-0"), []byte("lines\n"), 0o644); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	sh := exec.Command("sh", "-c", "sleep 600 & echo $!; wait")
	run.Hold(sh)
	out, err := sh.StdoutPipe()
	if err == nil {
		err = sh.Start()
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Printf("READY %s %s\n", run.Dir(), strings.TrimSpace(line))
	select {}
}

// A disk run (the base under $TMPDIR that large files go to, never
// /dev/shm) whose owner was SIGKILLed is reaped by the next run opened
// with default options, which goes to /dev/shm: every base is reaped, not
// only the one the new run goes to. A process the dead run held (a
// compiler a killed `go build` started) keeps the directory until it is
// gone too.
func TestOpen_ReapsDiskRunsAndWaitsForHeldProcesses(t *testing.T) {
	tmp, shm := testBase(t), testBase(t)
	t.Setenv("TMPDIR", tmp)
	t.Setenv(runenv.EnvRunDir, "")
	t.Cleanup(runenv.SetShmDir(shm))

	c := startChild(t, "holder")
	cmd, dir, sleep := c.cmd, c.runDir, c.pid
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	if want := filepath.Join(tmp, fmt.Sprintf("idemchaos-%d", os.Geteuid())); filepath.Dir(dir) != want {
		t.Fatalf("disk run in %s, want it under %s", dir, want)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); exitSignal(err) != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", err)
	}
	if !proctest.Alive(sleep) {
		t.Fatalf("the held grandchild %d died with its parent: the test would not show the lock it holds", sleep)
	}
	ctx := context.Background()
	next, err := runenv.Open(ctx, runenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	if !strings.HasPrefix(next.Dir(), shm) {
		t.Fatalf("next run in %s, want it in the (test's) /dev/shm %s", next.Dir(), shm)
	}
	if _, err := os.Stat(filepath.Join(dir, "part-0")); err != nil {
		t.Fatalf("the dead run's directory went while a process it held still runs: %v", err)
	}

	if err := syscall.Kill(sleep, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for proctest.Alive(sleep) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %d survived SIGKILL", sleep)
		}
		time.Sleep(5 * time.Millisecond)
	}
	again, err := runenv.Open(ctx, runenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale disk run %s not reaped once nothing held it: %v", dir, err)
	}
}

// Bases lists the environment's base, /dev/shm's and $TMPDIR's, once each.
func TestBases(t *testing.T) {
	tmp, shm, moved := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Cleanup(runenv.SetShmDir(shm))
	user := fmt.Sprintf("idemchaos-%d", os.Geteuid())
	t.Setenv(runenv.EnvRunDir, "")
	if got, want := runenv.Bases(), []string{filepath.Join(shm, user), filepath.Join(tmp, user)}; !slices.Equal(got, want) {
		t.Fatalf("Bases %v, want %v", got, want)
	}
	if got := runenv.DiskBase(); got != filepath.Join(tmp, user) {
		t.Fatalf("DiskBase %s", got)
	}
	t.Setenv(runenv.EnvRunDir, moved)
	if got, want := runenv.Bases(), []string{moved, filepath.Join(shm, user), filepath.Join(tmp, user)}; !slices.Equal(got, want) {
		t.Fatalf("Bases %v, want %v", got, want)
	}
	if got := runenv.DiskBase(); got != moved {
		t.Fatalf("DiskBase %s, want %s", got, moved)
	}
}

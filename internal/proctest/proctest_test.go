package proctest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this test's own process does not count as alive")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Fatalf("a running sleep %d does not count as alive", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped: a zombie runs nothing.
	WaitGone(t, pid, 10*time.Second, "a killed, unreaped child still counts as alive")
	_ = cmd.Wait()
	if Alive(pid) {
		t.Fatalf("reaped child %d still counts as alive", pid)
	}
}

type fakeTB struct{ failed bool }

func (*fakeTB) Helper()                 {}
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestWaitGone_FailsOnSurvivor(t *testing.T) {
	var tb fakeTB
	WaitGone(&tb, os.Getpid(), 20*time.Millisecond, "still here")
	if !tb.failed {
		t.Fatal("WaitGone did not fail for a process that stayed")
	}
}

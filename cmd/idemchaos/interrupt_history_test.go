package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signal sends sig to the binary (to its whole process group when group,
// as a terminal does) and waits for it to exit; it returns the exit code.
func (c *cli) signal(t *testing.T, sig syscall.Signal, group bool) int {
	t.Helper()
	c.record()
	pid := c.cmd.Process.Pid
	if group {
		pid = -pid
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60s after %v\nstderr:\n%s", sig, c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode()
}

// A run cut short by SIGINT (Ctrl-C, to the process group), SIGTERM or
// SIGHUP (a closed terminal: the same as SIGTERM) leaves its partial
// history at the --history path the user gave, whole and marked
// interrupted, with nothing else left beside it; every process stopped.
func TestInterrupt_PartialHistoryAtTheHistoryPath(t *testing.T) {
	bin := buildCLI(t)
	for _, s := range []struct {
		sig   syscall.Signal
		group bool
	}{{syscall.SIGINT, true}, {syscall.SIGTERM, false}, {syscall.SIGHUP, false}} {
		t.Run(s.sig.String(), func(t *testing.T) {
			out := t.TempDir()
			dst := filepath.Join(out, "run.jsonl")
			c := startBin(t, bin, "run", "-s", "../../scenarios/crash-mid-request.yaml", "--mutant", "no-lease",
				"--reruns", "0", "--shrink=false", "--history", dst)
			c.waitUntil(t, "traffic", func() bool { return len(c.historiesWithInvoke()) > 0 })
			code := c.signal(t, s.sig, s.group)
			assertInterrupted(t, c, code)
			if !strings.Contains(c.stderr.String(), "partial history kept: "+dst+"\n") {
				t.Fatalf("the partial history is not named at %s\nstderr:\n%s", dst, c.stderr.String())
			}
			assertPartial(t, dst)
			if entries, _ := os.ReadDir(out); len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Fatalf("beside the history: %v", names)
			}
		})
	}
}

// With --seeds, --history is a directory: the runs that finished and the
// partial one of the run cut short are all there.
func TestInterrupt_SeedsKeepEveryHistoryInTheDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "histories")
	c := startCLI(t, "run", "-s", "../../scenarios/crash-mid-request.yaml", "--mutant", "no-lease",
		"--reruns", "0", "--shrink=false", "--seeds", "1-5", "--history", out)
	c.waitUntil(t, "a second run's traffic", func() bool { return len(c.historiesWithInvoke()) >= 2 })
	code := c.signal(t, syscall.SIGTERM, false)
	assertInterrupted(t, c, code)
	kept, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
	if len(kept) < 2 {
		t.Fatalf("%s holds %v, want the finished runs' histories and the partial one\nstderr:\n%s", out, kept, c.stderr.String())
	}
	partial := ""
	for _, k := range kept {
		if strings.Contains(c.stderr.String(), "partial history kept: "+k+"\n") {
			partial = k
		}
	}
	if partial == "" {
		t.Fatalf("no partial history named in %s\nstderr:\n%s", out, c.stderr.String())
	}
	assertPartial(t, partial)
}

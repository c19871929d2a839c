package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests interrupt the real binary as a terminal's Ctrl-C does: SIGINT
// to its whole process group, at a moment chosen by what the run has
// visibly reached (a Postgres process started, a history file written).

// cli is the idemchaos binary under test, started in its own process group.
type cli struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	histories      string
	seen           map[int]string // descendants observed while it ran: pid → name
	born           map[int]string // their start times (/proc/PID/stat field 22): a reused pid is another process
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idemchaos")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func startCLI(t *testing.T, args ...string) *cli {
	t.Helper()
	return startBin(t, buildCLI(t), args...)
}

// startBin is startCLI with a binary already built.
func startBin(t *testing.T, bin string, args ...string) *cli {
	t.Helper()
	tmp := t.TempDir()
	c := &cli{cmd: exec.Command(bin, args...), done: make(chan struct{}), histories: filepath.Join(tmp, "idemchaos-histories"), seen: map[int]string{}, born: map[int]string{}}
	c.cmd.Env = append(os.Environ(), "TMPDIR="+tmp, historiesEnv+"="+c.histories)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	})
	return c
}

// waitUntil polls cond (and records the descendants) until it holds; it
// fails the test if the binary exits first or 60s pass.
func (c *cli) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	c.waitWithin(t, 60*time.Second, what, cond)
}

// waitWithin is waitUntil with another bound.
func (c *cli) waitWithin(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		c.record()
		if cond() {
			return
		}
		select {
		case <-c.done:
			t.Fatalf("idemchaos exited (%v) before %s\nstdout:\n%s\nstderr:\n%s", c.cmd.ProcessState, what, c.stdout.String(), c.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s\nstderr:\n%s", what, bound, c.stderr.String())
		}
	}
}

// interrupt sends SIGINT to the process group, as Ctrl-C does, and waits
// for the binary to exit; it returns the exit code.
func (c *cli) interrupt(t *testing.T) int {
	t.Helper()
	c.record()
	if err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60s after SIGINT\nstderr:\n%s", c.stderr.String())
	}
	return c.cmd.ProcessState.ExitCode()
}

// record notes every live descendant of the binary.
func (c *cli) record() {
	parent := map[int]int{}
	name, born := map[int]string{}, map[int]string{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parent[pid] = ppid
		name[pid] = string(stat[bytes.IndexByte(stat, '(')+1 : i])
		if len(fields) > 19 {
			born[pid] = fields[19]
		}
	}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == c.cmd.Process.Pid {
				c.seen[pid] = name[pid]
				c.born[pid] = born[pid]
				break
			}
		}
	}
}

// assertNoneLeft fails if a descendant seen while the binary ran is still
// alive a few seconds after it exited. The harness signals its children and
// waits for the ones it started, but a postmaster's own backends exit on
// their own clock once it is gone; on a loaded machine that is not at once.
// A pid now held by another process (same name, other start time: the
// machine runs other Postgres clusters) is not one of them.
func (c *cli) assertNoneLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []string
		for pid, n := range c.seen {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue // gone
			}
			i := bytes.LastIndexByte(stat, ')')
			f := strings.Fields(string(stat[i+1:]))
			same := len(f) > 19 && f[19] == c.born[pid] && string(stat[bytes.IndexByte(stat, '(')+1:i]) == n
			if same && f[0] != "Z" {
				alive = append(alive, n+" "+strconv.Itoa(pid))
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind, 5s after the binary exited: %v", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cli) names() []string {
	var out []string
	for _, n := range c.seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// historiesWithInvoke lists the history files that recorded traffic.
func (c *cli) historiesWithInvoke() []string {
	files, _ := filepath.Glob(filepath.Join(c.histories, "*.jsonl"))
	var out []string
	for _, f := range files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(`"type":"invoke"`)) {
			out = append(out, f)
		}
	}
	return out
}

func assertInterrupted(t *testing.T, c *cli, code int) {
	t.Helper()
	if code != ExitInterrupted || !strings.Contains(c.stderr.String(), "interrupted") {
		t.Fatalf("exit %d, want 130 with an \"interrupted\" line\nstdout:\n%s\nstderr:\n%s", code, c.stdout.String(), c.stderr.String())
	}
	c.assertNoneLeft(t)
}

// assertPartial checks that a kept partial history says it was interrupted
// and that check calls it unknown (exit 2), never a violation.
func assertPartial(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(`"type":"interrupted"`)) {
		t.Fatalf("partial history %s: %v; it lacks the interrupted marker:\n%.2000s", path, err, b)
	}
	code, stdout, stderr := runMain(t, "check", path)
	if code != ExitInconclusive || !strings.Contains(stdout+stderr, "interrupted") {
		t.Fatalf("check %s: exit %d, want 2 naming the interruption\n%s%s", path, code, stdout, stderr)
	}
}

// Ctrl-C while Postgres is starting: 130 and one line, not exit 3 with the
// server's log.
func TestInterrupt_DuringStartUp(t *testing.T) {
	c := startCLI(t, "run", "-s", "../../scenarios/response-drop-replay.yaml")
	c.waitUntil(t, "a Postgres process", func() bool {
		for _, n := range c.seen {
			if strings.HasPrefix(n, "initdb") || strings.HasPrefix(n, "postgres") || strings.HasPrefix(n, "pg_") {
				return true
			}
		}
		return false
	})
	code := c.interrupt(t)
	if len(c.historiesWithInvoke()) > 0 {
		t.Fatalf("traffic had started: the signal missed the start-up (processes seen: %v)", c.names())
	}
	assertInterrupted(t, c, code)
	if lines := strings.Count(strings.TrimSpace(c.stderr.String()), "\n") + 1; lines > 2 {
		t.Fatalf("stderr has %d lines, want the interrupted line alone:\n%s", lines, c.stderr.String())
	}
}

// Ctrl-C while a failing run is being re-run to classify it: no
// classification (it would be a guess), the first run's history and the
// re-run's partial one both named, 130.
func TestInterrupt_DuringReRun(t *testing.T) {
	c := startCLI(t, "run", "-s", "../../scenarios/double-click-exactly-once.yaml", "--mutant", "check-then-insert", "--reruns", "5", "--shrink=false")
	c.waitUntil(t, "a re-run sending traffic", func() bool { return len(c.historiesWithInvoke()) >= 2 })
	code := c.interrupt(t)
	assertInterrupted(t, c, code)
	out := c.stdout.String() + c.stderr.String()
	for _, bad := range []string{"intermittent", "reproducible"} {
		if strings.Contains(out, bad) {
			t.Fatalf("a classification from cut-short re-runs (%q):\n%s", bad, out)
		}
	}
	partial := regexp.MustCompile(`partial history kept: (\S+)`).FindStringSubmatch(c.stderr.String())
	first := regexp.MustCompile(`(?m)^history kept: (\S+)`).FindStringSubmatch(c.stderr.String())
	if partial == nil || first == nil {
		t.Fatalf("want both histories named\nstderr:\n%s", c.stderr.String())
	}
	assertPartial(t, partial[1])
}

// Ctrl-C during demo: 130, and the partial history it kept is named, in
// the --history directory.
func TestInterrupt_DuringDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "histories")
	c := startCLI(t, "demo", "--history", out)
	c.waitUntil(t, "traffic", func() bool { return len(c.historiesWithInvoke()) >= 1 })
	code := c.interrupt(t)
	assertInterrupted(t, c, code)
	m := regexp.MustCompile(`partial history kept: (\S+)`).FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("no partial history named\nstderr:\n%s", c.stderr.String())
	}
	if filepath.Dir(m[1]) != out {
		t.Fatalf("partial history kept at %s, want it in --history %s", m[1], out)
	}
	assertPartial(t, m[1])
}

package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/idemchaos/idemchaos/internal/histgen"
)

// These tests SIGKILL the real binary, which can clean nothing up, and
// check that what it left goes at the next command: every temp directory
// lives in a run directory that the next idemchaos command of any kind
// reaps once its owner is dead; containers go at the next docker run and
// at `idemchaos cleanup`.

// kill9 SIGKILLs the binary alone (not its process group: the processes
// it started are left to die as they would) and waits for it.
func (c *cli) kill9(t *testing.T) {
	t.Helper()
	c.record()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("ended with %v, want SIGKILL", c.cmd.ProcessState)
	}
}

// waitGone waits (bounded) until every descendant seen while the binary
// ran is gone: a compiler a killed `go build` started finishes on its own.
func (c *cli) waitGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		alive := 0
		for pid := range c.seen {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
				if i := strings.LastIndexByte(string(b), ')'); i > 0 && !strings.HasPrefix(string(b[i+2:]), "Z") {
					alive++
				}
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the killed binary still run: %v", alive, c.names())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tmpdir is the TMPDIR the binary ran with.
func (c *cli) tmpdir() string { return filepath.Dir(c.histories) }

// runDirs lists the run directories of this user under the binary's
// $TMPDIR (where disk runs go).
func (c *cli) runDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(c.tmpdir(), fmt.Sprintf("idemchaos-%d", os.Geteuid()), "run-*"))
	return dirs
}

// next runs the binary once more, as a user would next, with the same
// $TMPDIR; it returns the exit code and the output.
func (c *cli) next(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(c.cmd.Path, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+c.tmpdir(), historiesEnv+"="+c.histories)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// find lists the paths under root whose name starts with prefix.
func find(root, prefix string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), prefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// check --partitions SIGKILLed mid-way leaves its partition files; the
// next command of any kind (a plain check here) removes them, and so does
// cleanup, naming the directory.
func TestSIGKILL_CheckPartitionsLeftoversGoAtTheNextCommand(t *testing.T) {
	bin := buildCLI(t)
	big := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := histgen.Write(f, histgen.Default(400_000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, next := range [][]string{{"check", "../../testdata/examples/response-drop-clean.jsonl"}, {"cleanup"}} {
		t.Run(next[0], func(t *testing.T) {
			c := startBin(t, bin, "check", "--partitions", "8", big)
			var dir string
			c.waitUntil(t, "partition files", func() bool {
				for _, d := range c.runDirs() {
					if entries, _ := os.ReadDir(d); len(entries) > 1 { // the marker and more
						dir = d
						return true
					}
				}
				return false
			})
			c.kill9(t)
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("a SIGKILLed check cannot clean up, yet %s is gone: %v", dir, err)
			}
			code, out := c.next(t, next...)
			if code != 0 {
				t.Fatalf("%v: exit %d\n%s", next, code, out)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("%s left after %v: %v", dir, next, err)
			}
			if next[0] == "cleanup" && !strings.Contains(out, "removed run directory "+dir) {
				t.Fatalf("cleanup does not name what it removed:\n%s", out)
			}
		})
	}
}

// dockerTests says whether this machine runs the docker tests (the
// dockerenv package's opt-out: IDEMCHAOS_DOCKER_TESTS=0).
func dockerTests(t *testing.T) *dc.Client {
	t.Helper()
	if os.Getenv("IDEMCHAOS_DOCKER_TESTS") == "0" {
		t.Skip("IDEMCHAOS_DOCKER_TESTS=0: docker tests switched off on this machine")
	}
	c, err := dc.NewClientFromEnv()
	if err == nil {
		err = c.Ping()
	}
	if err != nil {
		t.Fatalf("docker daemon unreachable (%v); or set IDEMCHAOS_DOCKER_TESTS=0 to skip the docker tests on a machine without Docker", err)
	}
	return c
}

// images build SIGKILLed while `go build` compiles leaves go's work
// directory — inside its run directory, never in $TMPDIR itself — and the
// next command removes it once the compilers it started are done.
func TestSIGKILL_ImagesBuildLeavesNoGoBuildBehind(t *testing.T) {
	dockerTests(t)
	c := startCLI(t, "images", "build")
	c.waitWithin(t, 5*time.Minute, "go build's work directory", func() bool { return len(find(c.tmpdir(), "go-build")) > 0 })
	c.kill9(t)
	c.waitGone(t)
	left := find(c.tmpdir(), "go-build")
	if len(left) == 0 {
		t.Fatal("go build's work directory went with a SIGKILL: the test shows nothing")
	}
	for _, l := range left {
		if filepath.Dir(l) == c.tmpdir() {
			t.Fatalf("go build's work directory %s is in $TMPDIR itself, outside any run directory", l)
		}
	}
	if code, out := c.next(t, "check", "../../testdata/examples/response-drop-clean.jsonl"); code != 0 {
		t.Fatalf("next: exit %d\n%s", code, out)
	}
	if left := find(c.tmpdir(), "go-build"); len(left) > 0 {
		t.Fatalf("left after the next command: %v", left)
	}
	if dirs := c.runDirs(); len(dirs) > 0 {
		t.Fatalf("run directories left: %v", dirs)
	}
}

// ownedBy lists the containers whose owner label names pid.
func ownedBy(t *testing.T, d *dc.Client, pid int) []string {
	t.Helper()
	cs, err := d.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {"io.idemchaos.owner"}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ct := range cs {
		if p, _, _ := strings.Cut(ct.Labels["io.idemchaos.owner"], "/"); p == fmt.Sprint(pid) {
			out = append(out, ct.ID[:12])
		}
	}
	return out
}

// A docker run SIGKILLed with its containers up leaves them; cleanup
// removes them, and so does the next docker run: what was there when it
// started before it starts its own, and what the daemon still created for
// the dead run after its death (requests in flight) on its way out.
func TestSIGKILL_DockerRunContainersGoAtCleanupAndTheNextDockerRun(t *testing.T) {
	d := dockerTests(t)
	// A static binary is its own reference image: no go build of the
	// module per run, which a loaded machine takes minutes over.
	bin := filepath.Join(t.TempDir(), "idemchaos")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	args := []string{"run", "--env", "docker", "-s", "../../scenarios/crash-mid-request.yaml", "--mutant", "no-lease", "--reruns", "0", "--shrink=false"}
	killed := func() *cli {
		c := startBin(t, bin, args...)
		// Killed with its traffic flowing: the environment is up, and the
		// daemon has few of its requests left in flight.
		c.waitWithin(t, 5*time.Minute, "its containers and traffic", func() bool {
			return len(ownedBy(t, d, c.cmd.Process.Pid)) >= 3 && len(c.historiesWithInvoke()) > 0
		})
		c.kill9(t)
		return c
	}

	a := killed()
	if len(ownedBy(t, d, a.cmd.Process.Pid)) == 0 {
		t.Fatal("a SIGKILLed docker run cannot remove its containers, yet they are gone")
	}
	code, out := a.next(t, "cleanup")
	if code != 0 || !strings.Contains(out, "docker: removed") {
		t.Fatalf("cleanup: exit %d\n%s", code, out)
	}
	if left := ownedBy(t, d, a.cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("containers of the killed run left after cleanup: %v\n%s", left, out)
	}

	b := killed()
	before := ownedBy(t, d, b.cmd.Process.Pid)
	if len(before) == 0 {
		t.Fatal("a SIGKILLed docker run cannot remove its containers, yet they are gone")
	}
	c := startBin(t, bin, args...)
	c.waitWithin(t, 5*time.Minute, "the next docker run's containers", func() bool { return len(ownedBy(t, d, c.cmd.Process.Pid)) > 0 })
	now := ownedBy(t, d, b.cmd.Process.Pid)
	for _, id := range before {
		if slices.Contains(now, id) {
			t.Fatalf("the next docker run started its own containers but left the killed run's %s", id)
		}
	}
	if code := c.signal(t, syscall.SIGTERM, false); code != ExitInterrupted {
		t.Fatalf("the next docker run: exit %d on SIGTERM\n%s", code, c.stderr.String())
	}
	if left := ownedBy(t, d, b.cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("containers the daemon made for the killed run after its death outlive the next run: %v", left)
	}
	if left := ownedBy(t, d, c.cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("a docker run ended by SIGTERM left containers: %v", left)
	}
}

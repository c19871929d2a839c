package runenv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// A real 64 MB tmpfs, the default /dev/shm of a container, stands in for
// /dev/shm: the run goes to $TMPDIR with one line saying so, and a real
// cluster starts there. Mounting needs root.
func TestOpen_SmallShmFallsBackToTmp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestChooseBase covers the choice with an injected free-space function")
	}
	shm, err := os.MkdirTemp("", "idemchaos-shm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(shm) })
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", shm).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", shm).Run() })
	t.Cleanup(runenv.SetShmDir(shm))
	t.Setenv(runenv.EnvRunDir, "")

	var notes []string
	run, err := runenv.Open(context.Background(), runenv.Options{NoReap: true, Logf: func(f string, a ...any) {
		notes = append(notes, fmt.Sprintf(f, a...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Close(context.Background()) })
	if strings.HasPrefix(run.Dir(), shm) || !strings.HasPrefix(run.Dir(), os.TempDir()) {
		t.Fatalf("run directory %s: want it under %s, not in the small %s", run.Dir(), os.TempDir(), shm)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "64 MiB free") || !strings.Contains(notes[0], runenv.EnvRunDir) {
		t.Fatalf("notes %q: want one line naming the small /dev/shm and %s", notes, runenv.EnvRunDir)
	}
	c, err := pgcluster.Start(context.Background(), pgcluster.Config{Run: run})
	if err != nil {
		t.Fatalf("a cluster in the fallback directory: %v", err)
	}
	if !strings.HasPrefix(c.DataDir(), run.Dir()) {
		t.Fatalf("data directory %s outside the run %s", c.DataDir(), run.Dir())
	}
}

// IDEMCHAOS_RUNDIR moves run directories.
func TestOpen_RunDirFromTheEnvironment(t *testing.T) {
	base := testBase(t)
	t.Setenv(runenv.EnvRunDir, base)
	run, err := runenv.Open(context.Background(), runenv.Options{NoReap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close(context.Background())
	if filepath.Dir(run.Dir()) != base {
		t.Fatalf("run directory %s, want it in %s", run.Dir(), base)
	}
}

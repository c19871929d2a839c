package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/idemchaos/idemchaos/internal/runenv"
)

// withGoBinary builds the Go main package pkg as the static binary name in
// a run directory of its own and calls use with its path. The directory
// (the binary, and `go build`'s work directory through GOTMPDIR) is
// removed when use returns, and by the next run's reaper when this process
// is killed outright: never a go-build* directory left in $TMPDIR.
func withGoBinary(ctx context.Context, pkg, name string, use func(bin string) (string, error)) (string, error) {
	run, err := runenv.Open(ctx, runenv.Options{Disk: true})
	if err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	defer run.Close(context.WithoutCancel(ctx))
	work, err := run.NewDir("go", -1, -1)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	bin := filepath.Join(run.Dir(), name)
	if err := goBuild(ctx, run, work, pkg, bin); err != nil {
		return "", err
	}
	return use(bin)
}

// goBuild builds pkg with CGO_ENABLED=0, its work directory under work.
// Inside a module that provides pkg (this one, in tests and from a
// checkout) it is `go build`; elsewhere `go install pkg@version` with the
// version this binary was built with.
func goBuild(ctx context.Context, run *runenv.Run, work, pkg, out string) error {
	if _, err := exec.LookPath("go"); err != nil {
		return errors.New("building it needs the Go toolchain on PATH")
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOTMPDIR="+work)
	b, err := goCommand(ctx, run, env, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	if err == nil {
		return nil
	}
	version := moduleVersion(pkg)
	if version == "" {
		return fmt.Errorf("go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	gobin := filepath.Dir(out)
	if b, err := goCommand(ctx, run, append(env, "GOBIN="+gobin), "install", "-trimpath", "-ldflags=-s -w", pkg+"@"+version); err != nil {
		return fmt.Errorf("go install %s@%s: %w: %s", pkg, version, err, strings.TrimSpace(string(b)))
	}
	return os.Rename(filepath.Join(gobin, filepath.Base(pkg)), out)
}

// goCommand runs the go command held by run (it dies with this process,
// and the run is not reaped while a compiler it started still writes), in
// a process group of its own, so that a cancelled build stops the
// compilers too before the run directory is removed.
func goCommand(ctx context.Context, run *runenv.Run, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	run.Hold(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd.CombinedOutput()
}

// moduleVersion is the version of the dependency providing pkg in this
// binary's build info, or "".
func moduleVersion(pkg string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if strings.HasPrefix(pkg, d.Path+"/") || pkg == d.Path {
			return d.Version
		}
	}
	return ""
}

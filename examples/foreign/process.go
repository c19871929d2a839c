package foreign

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Package is the import path of the command that serves the corpus.
const Package = "github.com/idemchaos/idemchaos/examples/foreign/cmd/foreignsvc"

// Build compiles cmd/foreignsvc into dir and returns the binary's path. It
// needs the go command and a working directory inside the module.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "foreignsvc")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, Package)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, out)
	}
	return bin, nil
}

// ModuleRoot is the directory of the module's go.mod, where the corpus's
// scenario paths start.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the idemchaos module (go env GOMOD: %q, %v)", gomod, err)
	}
	return filepath.Dir(gomod), nil
}

// Service is one running service process.
type Service struct {
	// URL is where it listens (http://127.0.0.1:PORT).
	URL string

	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
}

// Start runs the case's service as a separate process on a free loopback
// port: bin (cmd/foreignsvc) with the case's arguments, or the case's own
// Command run from root (the module root), with --addr, the case's Args
// and, when dsn is set, its DSNFlag and dsn. It returns once the service
// accepts connections. The process dies with its parent.
func Start(ctx context.Context, bin, root string, c Case, dsn string) (*Service, error) {
	args := append([]string{"--addr", "127.0.0.1:0"}, c.Args...)
	if dsn != "" {
		flag := c.DSNFlag
		if flag == "" {
			flag = "-dsn"
		}
		args = append(args, flag, dsn)
	}
	prog := bin
	if len(c.Command) > 0 {
		prog, args = c.Command[0], append(slices.Clone(c.Command[1:]), args...)
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = root
	if len(c.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Service{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		close(lines)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case line, ok := <-lines:
		if url, found := strings.CutPrefix(line, "listening on "); ok && found {
			s.URL = url
			return s, nil
		}
		s.Stop()
		return nil, fmt.Errorf("%s did not start: %q\n%s", c.Name, line, s.Stderr())
	case <-wait.Done():
		s.Stop()
		return nil, fmt.Errorf("%s did not start: %w\n%s", c.Name, wait.Err(), s.Stderr())
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after 5s.
func (s *Service) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Exited says whether the process has ended.
func (s *Service) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stderr is what the process wrote to stderr so far.
func (s *Service) Stderr() string { return s.stderr.String() }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

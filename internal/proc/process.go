package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Spec says how to run a child process.
type Spec struct {
	// Path is the executable.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// LogPath receives stdout and stderr, appended across restarts. Empty
	// means the output is discarded (but still scanned by [LineReady]).
	LogPath string
	// Ready decides readiness; nil means ready as soon as it started.
	Ready Ready
	// ReadyTimeout bounds the wait for Ready. Zero means 30s.
	ReadyTimeout time.Duration
	// StopGrace is how long [Process.Stop] waits after SIGTERM before
	// SIGKILL. Zero means 5s.
	StopGrace time.Duration
	// Credential, if set, runs the child as another user.
	Credential *syscall.Credential

	_ struct{}
}

// Process is a supervised child process. Across [Process.Restart] it is the
// same Process with a new PID.
type Process struct {
	spec Spec

	mu  sync.Mutex
	cur *incarnation
	// up is closed, and replaced, each time an incarnation becomes ready:
	// what [Process.WaitUp] waits on while the process is down.
	up chan struct{}
}

// outputDrain bounds how long an exit waits for the output pipe to reach
// EOF.
const outputDrain = time.Second

// incarnation is one run of the process.
type incarnation struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed after wait(2) and the output's drain (see outputDrain)
	ready   bool          // passed its readiness check (guarded by Process.mu)
	err     error         // valid after exited
	outDone chan struct{} // closed when the output pipe hits EOF

	mu       sync.Mutex
	lines    []string // recent output lines, for late watchers
	watchers []watcher
}

// watcher is a [LineReady] waiting for a matching line.
type watcher struct {
	match func(string) bool
	ch    chan struct{}
}

// keepLines bounds the output lines kept for late watchers.
const keepLines = 1000

// Start starts the process and waits until it is ready. If it exits or the
// readiness check times out, it is killed and the error (with the tail of
// its log) is returned.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	p := &Process{spec: spec, up: make(chan struct{})}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// start launches one incarnation and waits for readiness.
func (p *Process) start(ctx context.Context) error {
	in, err := p.launch()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cur = in
	p.mu.Unlock()
	if p.spec.Ready == nil {
		p.markUp(in)
		return nil
	}
	timeout := p.spec.ReadyTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = p.spec.Ready.wait(rctx, in)
	if err == nil {
		p.markUp(in)
		return nil
	}
	in.kill()
	switch {
	case errors.Is(err, ErrExited):
		return fmt.Errorf("start %s: %w (%v): %s", p.spec.Path, ErrExited, in.err, p.logTail())
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return fmt.Errorf("start %s: %w after %v: %s", p.spec.Path, ErrReadyTimeout, timeout, p.logTail())
	}
	return fmt.Errorf("start %s: %w", p.spec.Path, err)
}

// markUp says in passed its readiness check and wakes [Process.WaitUp].
func (p *Process) markUp(in *incarnation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in.ready = true
	close(p.up)
	p.up = make(chan struct{})
}

// WaitUp returns once the process runs and has passed its readiness check:
// at once when it does, after the restart when it is down, or with ctx's
// error when ctx ends first (a process nobody restarts stays down).
func (p *Process) WaitUp(ctx context.Context) error {
	for {
		p.mu.Lock()
		in, up := p.cur, p.up
		ready := in.ready
		p.mu.Unlock()
		if ready {
			select {
			case <-in.exited:
			default:
				return nil
			}
		}
		select {
		case <-up:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// launch execs the process with its output going through a pipe into the
// log.
func (p *Process) launch() (*incarnation, error) {
	var log io.Writer = io.Discard
	var logFile *os.File
	if p.spec.LogPath != "" {
		f, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		logFile, log = f, f
	}
	r, w, err := os.Pipe()
	if err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Dir = p.spec.Dir
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.spec.Credential}
	err = cmd.Start()
	_ = w.Close() // the child has its copy; EOF comes when it (and its children) close theirs
	if err != nil {
		_ = r.Close()
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", p.spec.Path, err)
	}
	in := &incarnation{cmd: cmd, exited: make(chan struct{}), outDone: make(chan struct{})}
	go func() {
		in.err = cmd.Wait()
		// The process's last lines may still sit in the pipe when wait(2)
		// returns: exited means they are in the log and seen by watchers,
		// so a caller reading the log after Stop or Kill finds them. A
		// child outside the group can hold the pipe open; the drain is
		// bounded for it.
		t := time.NewTimer(outputDrain)
		select {
		case <-in.outDone:
		case <-t.C:
		}
		t.Stop()
		close(in.exited)
	}()
	go func() {
		defer close(in.outDone)
		defer r.Close()
		if logFile != nil {
			defer logFile.Close()
		}
		in.pump(r, log)
	}()
	return in, nil
}

// pump copies output lines to the log and to line watchers.
func (in *incarnation) pump(r io.Reader, log io.Writer) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			_, _ = io.WriteString(log, line)
			in.mu.Lock()
			in.lines = append(in.lines, line)
			if len(in.lines) > keepLines {
				in.lines = in.lines[len(in.lines)-keepLines:]
			}
			kept := in.watchers[:0]
			for _, w := range in.watchers {
				if w.match(line) {
					close(w.ch)
				} else {
					kept = append(kept, w)
				}
			}
			in.watchers = kept
			in.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// watch returns a channel closed once a line matching match has been (or
// is) written.
func (in *incarnation) watch(match func(string) bool) <-chan struct{} {
	ch := make(chan struct{})
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, l := range in.lines {
		if match(l) {
			close(ch)
			return ch
		}
	}
	in.watchers = append(in.watchers, watcher{match: match, ch: ch})
	return ch
}

// kill SIGKILLs the incarnation's process group and waits for it.
func (in *incarnation) kill() {
	_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
	<-in.exited
}

// current returns the current incarnation.
func (p *Process) current() *incarnation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// PID is the current incarnation's process ID.
func (p *Process) PID() int { return p.current().cmd.Process.Pid }

// LogPath is where the output goes.
func (p *Process) LogPath() string { return p.spec.LogPath }

// Exited is closed when the current incarnation has exited.
func (p *Process) Exited() <-chan struct{} { return p.current().exited }

// Err is how the current incarnation ended (an *exec.ExitError, or nil for
// exit status 0). Only valid once [Process.Exited] is closed.
func (p *Process) Err() error {
	in := p.current()
	select {
	case <-in.exited:
		return in.err
	default:
		return nil
	}
}

// Kill sends SIGKILL to the process group, as a crash would, and waits for
// the process to die. It returns [ErrNotRunning] if it had already exited.
func (p *Process) Kill(ctx context.Context) error {
	in := p.current()
	select {
	case <-in.exited:
		return ErrNotRunning
	default:
	}
	if err := syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %d: %w", in.cmd.Process.Pid, err)
	}
	select {
	case <-in.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill %d: %w", in.cmd.Process.Pid, ctx.Err())
	}
}

// Stop sends SIGTERM to the process group, waits up to the stop grace (or
// until ctx ends), then SIGKILLs it. Stopping an exited process is a no-op.
func (p *Process) Stop(ctx context.Context) error {
	in := p.current()
	select {
	case <-in.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGTERM)
	grace := p.spec.StopGrace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-in.exited:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	in.kill()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stop %d: %w", in.cmd.Process.Pid, err)
	}
	return nil
}

// Restart stops the current incarnation if it still runs (gracefully, as
// [Process.Stop]) and starts a new one, waiting for readiness.
func (p *Process) Restart(ctx context.Context) error {
	if err := p.Stop(ctx); err != nil {
		return err
	}
	return p.start(ctx)
}

// logTail is the end of the log, for error messages.
func (p *Process) logTail() string {
	if p.spec.LogPath == "" {
		in := p.current()
		in.mu.Lock()
		defer in.mu.Unlock()
		n := len(in.lines)
		if n > 10 {
			n = 10
		}
		var s string
		for _, l := range in.lines[len(in.lines)-n:] {
			s += l
		}
		return s
	}
	b, err := os.ReadFile(p.spec.LogPath)
	if err != nil {
		return "(no log)"
	}
	if len(b) > 800 {
		b = b[len(b)-800:]
	}
	return string(b)
}

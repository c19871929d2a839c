package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// server is one running postmaster.
type server struct {
	cmd     *exec.Cmd
	dataDir string
	sockDir string
	logPath string
	port    int
	exited  chan struct{} // closed when the postmaster has been waited for
	waitErr error         // valid after exited is closed
}

// serverSpec says how to start a postmaster.
type serverSpec struct {
	binDir   string
	user     serverUser
	dataDir  string
	sockDir  string
	logPath  string
	settings map[string]string
	timeout  time.Duration
}

// maxSocketPath is the longest Unix socket path the kernel accepts
// (sizeof(sun_path) - 1).
const maxSocketPath = 107

// checkSocketPath fails early, with a clear error, where postgres would
// fail late with a cryptic one.
func checkSocketPath(sockDir string) error {
	p := filepath.Join(sockDir, ".s.PGSQL.65535")
	if len(p) > maxSocketPath {
		return fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrSocketPathTooLong, p, len(p), maxSocketPath)
	}
	return nil
}

// maxPortAttempts bounds retries when another process takes the free port
// between our probe and the server's bind.
const maxPortAttempts = 5

// startServer starts a postmaster on a free loopback port and waits until a
// real connection succeeds.
func startServer(ctx context.Context, spec serverSpec) (*server, error) {
	if err := checkSocketPath(spec.sockDir); err != nil {
		return nil, err
	}
	var lastErr error
	for range maxPortAttempts {
		port, err := netaddr.FreePort()
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		s, err := launch(spec, port)
		if err != nil {
			return nil, err
		}
		err = s.waitReady(ctx, spec.timeout)
		if err == nil {
			return s, nil
		}
		_ = s.stop(context.Background())
		lastErr = err
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "could not bind") {
			return nil, err
		}
	}
	return nil, lastErr
}

// launch execs postgres. Port, socket directory and listen address go on the
// command line; everything else lives in the configuration files, so that
// ALTER SYSTEM can change it at run time (the command line would win).
func launch(spec serverSpec, port int) (*server, error) {
	logf, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	args := []string{"-D", spec.dataDir, "-p", strconv.Itoa(port), "-k", spec.sockDir,
		"-c", "listen_addresses=127.0.0.1"}
	for k, v := range spec.settings {
		args = append(args, "-c", k+"="+v)
	}
	cmd := exec.Command(filepath.Join(spec.binDir, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = spec.dataDir
	cmd.SysProcAttr = spec.user.sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &server{cmd: cmd, dataDir: spec.dataDir, sockDir: spec.sockDir, logPath: spec.logPath,
		port: port, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// dsn is the libpq URL of database db on this server.
func (s *server) dsn(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: fmt.Sprintf("127.0.0.1:%d", s.port),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// readyPoll is the pause between connection attempts while the server
// starts. Readiness is decided by a real connection, never by this pause.
const readyPoll = 5 * time.Millisecond

// waitReady connects until a connection succeeds, the server exits, or the
// timeout passes.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
		conn, err := pgconn.Connect(attempt, s.dsn("postgres"))
		cancelAttempt()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-s.exited:
			t.Stop()
			return fmt.Errorf("%w (%v): %s", ErrExited, s.waitErr, logTail(s.logPath))
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for postgres on port %d: %w (last error: %v): %s", s.port, ctx.Err(), err, logTail(s.logPath))
		case <-t.C:
		}
	}
}

// stopGrace is how long an immediate shutdown may take before the process
// group is SIGKILLed.
const stopGrace = 5 * time.Second

// stop shuts the server down in immediate mode (SIGQUIT: no checkpoint, the
// data is thrown away anyway) and waits for the postmaster to exit. If it
// does not exit within a grace, or ctx ends, the process group is SIGKILLed.
func (s *server) stop(ctx context.Context) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-s.exited:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	s.kill()
	if ctx.Err() != nil {
		return fmt.Errorf("stop postgres: %w", ctx.Err())
	}
	return nil
}

// kill SIGKILLs the server's whole process group, waits for the
// postmaster, and removes the shared memory segment it can no longer remove
// itself.
func (s *server) kill() {
	// KillServers reads postmaster.pid before the kill, so it knows the
	// segment; the group kill then catches backends it did not.
	_, _ = runenv.KillServers(context.Background(), s.dataDir)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

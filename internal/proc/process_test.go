package proc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proctest"
)

// envMode turns the test binary into a helper process.
const envMode = "IDEMCHAOS_PROC_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(envMode) {
	case "http":
		serveHTTP()
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("READY stubborn")
		select {}
	case "early-exit":
		fmt.Println("cannot start: bad config")
		os.Exit(3)
	case "supervisor":
		supervise()
	}
	os.Exit(m.Run())
}

// serveHTTP is the tiny service: /healthz, /pid; it logs a line per request
// and exits 0 on SIGTERM.
func serveHTTP() {
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { <-term; fmt.Println("terminating"); os.Exit(0) }()
	fmt.Println("listening on", l.Addr())
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("request", r.URL.Path)
		if r.URL.Path == "/pid" {
			fmt.Fprint(w, os.Getpid())
		}
	}))
}

// supervise starts a stubborn child through proc, prints its PID, and waits
// to be killed.
func supervise() {
	p, err := proc.Start(context.Background(), proc.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{envMode + "=stubborn"}, Ready: proc.LineReady("READY")})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("CHILD", p.PID())
	select {}
}

// startHTTP starts the helper service, stopped at cleanup.
func startHTTP(tb testing.TB) (*proc.Process, string) {
	tb.Helper()
	n, err := netaddr.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	port := strconv.Itoa(n)
	base := "http://127.0.0.1:" + port
	p, err := proc.Start(context.Background(), proc.Spec{
		Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     []string{envMode + "=http", "PORT=" + port},
		LogPath: filepath.Join(tb.TempDir(), "service.log"),
		Ready:   proc.HTTPReady(base + "/healthz"),
	})
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p, base
}

// servedPID asks the service for its PID.
func servedPID(base string) (int, error) {
	resp, err := http.Get(base + "/pid")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

// signalOf is the signal that ended a process, or 0.
func signalOf(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func TestProcess_KillIsSIGKILLAndRestartServesAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, base := startHTTP(t)
	first := p.PID()
	if pid, err := servedPID(base); err != nil || pid != first {
		t.Fatalf("served pid %d, %v; want %d", pid, err, first)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if sig := signalOf(p.Err()); sig != syscall.SIGKILL {
		t.Fatalf("process ended with %v, want SIGKILL", p.Err())
	}
	if _, err := servedPID(base); err == nil {
		t.Fatal("killed service still answers")
	}
	if err := p.Kill(ctx); !errors.Is(err, proc.ErrNotRunning) {
		t.Fatalf("second Kill: %v, want ErrNotRunning", err)
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if p.PID() == first {
		t.Fatal("restart kept the old PID")
	}
	if pid, err := servedPID(base); err != nil || pid != p.PID() {
		t.Fatalf("after restart served pid %d, %v; want %d", pid, err, p.PID())
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("graceful stop ended with %v, want exit 0", err)
	}
	log, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on", "request /pid", "terminating"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestProcess_StopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := proc.Start(ctx, proc.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{envMode + "=stubborn"}, Ready: proc.LineReady("READY"), StopGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if sig := signalOf(p.Err()); sig != syscall.SIGKILL {
		t.Fatalf("stubborn process ended with %v, want SIGKILL after the grace", p.Err())
	}
}

func TestProcess_ExitBeforeReadyIsAnError(t *testing.T) {
	t.Parallel()
	_, err := proc.Start(context.Background(), proc.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{envMode + "=early-exit"}, Ready: proc.LineReady("never printed")})
	if !errors.Is(err, proc.ErrExited) {
		t.Fatalf("Start: %v, want ErrExited", err)
	}
	if !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("error does not quote the output: %v", err)
	}
}

func TestProcess_ReadyTimeout(t *testing.T) {
	t.Parallel()
	_, err := proc.Start(context.Background(), proc.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{envMode + "=stubborn"}, Ready: proc.LineReady("never printed"), ReadyTimeout: 100 * time.Millisecond})
	if !errors.Is(err, proc.ErrReadyTimeout) {
		t.Fatalf("Start: %v, want ErrReadyTimeout", err)
	}
}

func TestProcess_DiesWithSIGKILLedHarness(t *testing.T) {
	t.Parallel()
	sup := exec.Command(os.Args[0], "-test.run=^$")
	sup.Env = append(os.Environ(), envMode+"=supervisor")
	out, err := sup.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sup.Process.Kill(); _ = sup.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read supervisor: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "CHILD")))
	if err != nil {
		t.Fatalf("supervisor said %q", line)
	}
	if err := sup.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = sup.Wait()
	// The child is not ours to wait for; poll (bounded) for the kernel's
	// parent-death SIGKILL to take effect.
	proctest.WaitGone(t, pid, 10*time.Second, fmt.Sprintf("child %d survived its SIGKILLed harness", pid))
}

// WaitUp returns at once for a running process, blocks while it is down,
// returns once a restart made it ready, and gives up when its context ends.
func TestProcess_WaitUpWaitsForTheRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, base := startHTTP(t)
	if err := p.WaitUp(ctx); err != nil {
		t.Fatalf("WaitUp on a running process: %v", err)
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.WaitUp(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitUp on a dead process with a cancelled context: %v, want context.Canceled", err)
	}
	up := make(chan error, 1)
	go func() { up <- p.WaitUp(ctx) }()
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-up; err != nil {
		t.Fatalf("WaitUp across the restart: %v", err)
	}
	// Up means it answers: the restart finished before WaitUp returned.
	if pid, err := servedPID(base); err != nil || pid != p.PID() {
		t.Fatalf("after WaitUp served pid %d, %v; want %d", pid, err, p.PID())
	}
}

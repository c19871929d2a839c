package reference_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// childEnv switches the test binary into a child process that runs the
// service (or the consumer), so crash failpoints can really kill a process.
const (
	childEnv       = "IDEMCHAOS_REFERENCE_CHILD"
	childConfigEnv = "IDEMCHAOS_REFERENCE_CHILD_CONFIG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	pgtest.Main(m)
}

// childConfig is what the parent passes to a child process.
type childConfig struct {
	DSN          string
	Mutant       string
	Lease        string
	ExitWhenIdle bool
}

// runChild runs Serve or Consume with failpoints on, prints "READY <addr>"
// on stdout once listening and logs to stderr.
func runChild(mode string) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := func(addr string) { fmt.Printf("READY %s\n", addr) }
	var err error
	switch mode {
	case "serve":
		err = reference.Serve(ctx, reference.Config{DSN: cc.DSN, Addr: "127.0.0.1:0", Mutant: cc.Mutant, Failpoints: true, MaxConns: 4, Ready: ready}, os.Stderr)
	case "consume":
		err = reference.Consume(ctx, reference.ConsumerConfig{DSN: cc.DSN, Mutant: cc.Mutant, Failpoints: true, ExitWhenIdle: cc.ExitWhenIdle, Ready: ready}, os.Stderr)
	default:
		err = fmt.Errorf("unknown child mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// child is a service or consumer running in a child process.
type child struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan struct{}
	err    error // Wait's result, valid after done
}

// startChild re-executes the test binary in mode ("serve" or "consume")
// and returns once it printed its address.
func startChild(t *testing.T, mode string, cc childConfig) *child {
	t.Helper()
	raw, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childConfigEnv+"="+string(raw))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		defer func() { c.err = cmd.Wait(); close(c.done) }()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				addrc <- a
			}
		}
		_, _ = io.Copy(io.Discard, out) // keep draining so the child never blocks
	}()
	select {
	case c.addr = <-addrc:
	case <-c.done:
		t.Fatalf("child %s did not start: %v\n%s", mode, c.err, c.stderr.String())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-c.done
		if t.Failed() {
			t.Logf("child %s stderr:\n%s", mode, c.stderr.String())
		}
	})
	return c
}

// wait blocks until the child exited and reports whether SIGKILL ended it.
func (c *child) waitKilled(t *testing.T) bool {
	t.Helper()
	<-c.done
	ee, ok := c.err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// syncBuffer is a bytes.Buffer safe for concurrent writers that can be
// waited on.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// waitFor blocks until the buffer contains substr (signalled by writes).
func (b *syncBuffer) waitFor(t *testing.T, substr string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		b.mu.Lock()
		if strings.Contains(b.buf.String(), substr) {
			b.mu.Unlock()
			return
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no %q in the logs after 30s", substr)
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

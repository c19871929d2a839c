package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/proxy"
)

var external struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if external.dir != "" {
		_ = os.RemoveAll(external.dir)
	}
	os.Exit(code)
}

// toxiproxyServerBin builds toxiproxy-server from the module once per test
// binary.
func toxiproxyServerBin(tb testing.TB) string {
	tb.Helper()
	external.once.Do(func() {
		external.dir, external.err = os.MkdirTemp("", "idemchaos-toxiproxy-")
		if external.err != nil {
			return
		}
		external.bin = filepath.Join(external.dir, "toxiproxy-server")
		out, err := exec.Command("go", "build", "-o", external.bin, "github.com/Shopify/toxiproxy/v2/cmd/server").CombinedOutput()
		if err != nil {
			external.err = fmt.Errorf("go build toxiproxy-server: %w: %s", err, out)
		}
	})
	if external.err != nil {
		tb.Fatal(external.err)
	}
	return external.bin
}

// startExternal runs a real toxiproxy-server on a free loopback port and
// returns a Server connected to it.
func startExternal(tb testing.TB) proxy.Server {
	tb.Helper()
	bin := toxiproxyServerBin(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start toxiproxy-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := proxy.Connect(context.Background(), url)
		if err == nil {
			tb.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		}
		if !errors.Is(err, proxy.ErrUnreachable) || time.Now().After(deadline) {
			tb.Fatalf("toxiproxy-server never answered: %v", err)
		}
		select {
		case <-exited:
			tb.Fatalf("toxiproxy-server exited: %v", err)
		case <-tick.C:
		}
	}
}

// servers are the two implementations every behaviour runs against.
var servers = map[string]func(testing.TB) proxy.Server{
	"in-process": func(tb testing.TB) proxy.Server {
		s := proxy.NewInProcess()
		tb.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	},
	"external": startExternal,
}

// echoServer answers each line with the same line and reports every line it
// received on got.
type echoServer struct {
	addr string
	got  chan string
}

// startEcho starts an echo server closed at cleanup.
func startEcho(tb testing.TB) *echoServer {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	e := &echoServer{addr: l.Addr().String(), got: make(chan string, 16)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					e.got <- line
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return e
}

// roundTrip sends one line through addr and returns the answer.
func roundTrip(addr, line string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestServer_ForwardsAndDelays(t *testing.T) {
	t.Parallel()
	for name, newServer := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, echo := newServer(t), startEcho(t)
			addr, err := s.CreateProxy(ctx, "echo", "", echo.addr)
			if err != nil {
				t.Fatalf("CreateProxy: %v", err)
			}
			if got, err := roundTrip(addr, "hello\n"); err != nil || got != "hello\n" {
				t.Fatalf("through proxy: %q, %v", got, err)
			}
			const latency = 150 * time.Millisecond
			err = s.AddToxic(ctx, "echo", proxy.Toxic{Name: "slow", Type: "latency",
				Attributes: map[string]any{"latency": latency.Milliseconds()}})
			if err != nil {
				t.Fatalf("AddToxic: %v", err)
			}
			start := time.Now()
			if got, err := roundTrip(addr, "slow\n"); err != nil || got != "slow\n" {
				t.Fatalf("through latency: %q, %v", got, err)
			}
			if d := time.Since(start); d < latency {
				t.Fatalf("round trip took %v, want at least %v", d, latency)
			}
			if err := s.RemoveToxic(ctx, "echo", "slow"); err != nil {
				t.Fatalf("RemoveToxic: %v", err)
			}
			if err := s.RemoveToxic(ctx, "echo", "slow"); !errors.Is(err, proxy.ErrToxicNotFound) {
				t.Fatalf("second RemoveToxic: %v, want ErrToxicNotFound", err)
			}
		})
	}
}

func TestServer_LimitDataDownstreamDropsResponseAfterDelivery(t *testing.T) {
	t.Parallel()
	for name, newServer := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, echo := newServer(t), startEcho(t)
			addr, err := s.CreateProxy(ctx, "drop", "", echo.addr)
			if err != nil {
				t.Fatalf("CreateProxy: %v", err)
			}
			err = s.AddToxic(ctx, "drop", proxy.Toxic{Type: "limit_data", Stream: proxy.Downstream,
				Attributes: map[string]any{"bytes": 0}})
			if err != nil {
				t.Fatalf("AddToxic: %v", err)
			}
			got, err := roundTrip(addr, "charge\n")
			if err == nil {
				t.Fatalf("client got %q, want no response", got)
			}
			select {
			case line := <-echo.got:
				if line != "charge\n" {
					t.Fatalf("server got %q", line)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the request never reached the server")
			}
			if err := s.ResetToxics(ctx, "drop"); err != nil {
				t.Fatalf("ResetToxics: %v", err)
			}
			if got, err := roundTrip(addr, "again\n"); err != nil || got != "again\n" {
				t.Fatalf("after reset: %q, %v", got, err)
			}
		})
	}
}

func TestServer_DisableRemoveAndErrors(t *testing.T) {
	t.Parallel()
	for name, newServer := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, echo := newServer(t), startEcho(t)
			addr, err := s.CreateProxy(ctx, "p", "", echo.addr)
			if err != nil {
				t.Fatalf("CreateProxy: %v", err)
			}
			if _, err := s.CreateProxy(ctx, "p", "", echo.addr); !errors.Is(err, proxy.ErrProxyExists) {
				t.Fatalf("duplicate CreateProxy: %v, want ErrProxyExists", err)
			}
			if err := s.AddToxic(ctx, "p", proxy.Toxic{Type: "no_such_toxic"}); !errors.Is(err, proxy.ErrBadToxic) {
				t.Fatalf("bad toxic: %v, want ErrBadToxic", err)
			}
			if err := s.AddToxic(ctx, "missing", proxy.Toxic{Type: "latency"}); !errors.Is(err, proxy.ErrProxyNotFound) {
				t.Fatalf("toxic on missing proxy: %v, want ErrProxyNotFound", err)
			}
			if err := s.SetEnabled(ctx, "p", false); err != nil {
				t.Fatalf("disable: %v", err)
			}
			if _, err := roundTrip(addr, "x\n"); err == nil {
				t.Fatal("disabled proxy still forwards")
			}
			if err := s.SetEnabled(ctx, "p", true); err != nil {
				t.Fatalf("enable: %v", err)
			}
			if got, err := roundTrip(addr, "back\n"); err != nil || got != "back\n" {
				t.Fatalf("re-enabled proxy: %q, %v", got, err)
			}
			if err := s.RemoveProxy(ctx, "p"); err != nil {
				t.Fatalf("RemoveProxy: %v", err)
			}
			if _, err := roundTrip(addr, "x\n"); err == nil {
				t.Fatal("removed proxy still forwards")
			}
			if err := s.RemoveProxy(ctx, "p"); !errors.Is(err, proxy.ErrProxyNotFound) {
				t.Fatalf("second RemoveProxy: %v, want ErrProxyNotFound", err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := s.CreateProxy(ctx, "q", "", echo.addr); !errors.Is(err, proxy.ErrClosed) {
				t.Fatalf("CreateProxy after Close: %v, want ErrClosed", err)
			}
		})
	}
}

func TestConnect_UnreachableServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	if _, err := proxy.Connect(context.Background(), "http://"+addr); !errors.Is(err, proxy.ErrUnreachable) {
		t.Fatalf("Connect to closed port: %v, want ErrUnreachable", err)
	}
}

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

	"github.com/stretchr/testify/require"

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
	require.NoError(tb, external.err)
	return external.bin
}

// startExternal runs a real toxiproxy-server on a free loopback port and
// returns a Server connected to it.
func startExternal(tb testing.TB) proxy.Server {
	tb.Helper()
	bin := toxiproxyServerBin(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	require.NoError(tb, cmd.Start(), "start toxiproxy-server")
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
	require.NoError(tb, err)
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
			require.NoError(t, err, "CreateProxy")
			got, err := roundTrip(addr, "hello\n")
			require.NoError(t, err, "through proxy")
			require.Equal(t, "hello\n", got, "through proxy")
			const latency = 150 * time.Millisecond
			err = s.AddToxic(ctx, "echo", proxy.Toxic{Name: "slow", Type: "latency",
				Attributes: map[string]any{"latency": latency.Milliseconds()}})
			require.NoError(t, err, "AddToxic")
			start := time.Now()
			got, err = roundTrip(addr, "slow\n")
			require.NoError(t, err, "through latency")
			require.Equal(t, "slow\n", got, "through latency")
			require.GreaterOrEqual(t, time.Since(start), latency, "the latency toxic delays the round trip")
			require.NoError(t, s.RemoveToxic(ctx, "echo", "slow"), "RemoveToxic")
			require.ErrorIs(t, s.RemoveToxic(ctx, "echo", "slow"), proxy.ErrToxicNotFound, "second RemoveToxic")
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
			require.NoError(t, err, "CreateProxy")
			err = s.AddToxic(ctx, "drop", proxy.Toxic{Type: "limit_data", Stream: proxy.Downstream,
				Attributes: map[string]any{"bytes": 0}})
			require.NoError(t, err, "AddToxic")
			got, err := roundTrip(addr, "charge\n")
			require.Error(t, err, "client got %q, want no response", got)
			select {
			case line := <-echo.got:
				require.Equal(t, "charge\n", line, "what the server got")
			case <-time.After(5 * time.Second):
				require.FailNow(t, "the request never reached the server")
			}
			require.NoError(t, s.ResetToxics(ctx, "drop"), "ResetToxics")
			got, err = roundTrip(addr, "again\n")
			require.NoError(t, err, "after reset")
			require.Equal(t, "again\n", got, "after reset")
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
			require.NoError(t, err, "CreateProxy")
			_, err = s.CreateProxy(ctx, "p", "", echo.addr)
			require.ErrorIs(t, err, proxy.ErrProxyExists, "duplicate CreateProxy")
			require.ErrorIs(t, s.AddToxic(ctx, "p", proxy.Toxic{Type: "no_such_toxic"}), proxy.ErrBadToxic, "bad toxic")
			require.ErrorIs(t, s.AddToxic(ctx, "missing", proxy.Toxic{Type: "latency"}), proxy.ErrProxyNotFound, "toxic on missing proxy")
			require.NoError(t, s.SetEnabled(ctx, "p", false), "disable")
			_, err = roundTrip(addr, "x\n")
			require.Error(t, err, "disabled proxy still forwards")
			require.NoError(t, s.SetEnabled(ctx, "p", true), "enable")
			got, err := roundTrip(addr, "back\n")
			require.NoError(t, err, "re-enabled proxy")
			require.Equal(t, "back\n", got, "re-enabled proxy")
			require.NoError(t, s.RemoveProxy(ctx, "p"), "RemoveProxy")
			_, err = roundTrip(addr, "x\n")
			require.Error(t, err, "removed proxy still forwards")
			require.ErrorIs(t, s.RemoveProxy(ctx, "p"), proxy.ErrProxyNotFound, "second RemoveProxy")
			require.NoError(t, s.Close(ctx), "Close")
			_, err = s.CreateProxy(ctx, "q", "", echo.addr)
			require.ErrorIs(t, err, proxy.ErrClosed, "CreateProxy after Close")
		})
	}
}

func TestConnect_UnreachableServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	_ = l.Close()
	_, err = proxy.Connect(context.Background(), "http://"+addr)
	require.ErrorIs(t, err, proxy.ErrUnreachable, "Connect to closed port")
}

package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/proxy"
)

// fullListener is a loopback listener with a backlog of 0 that does not
// accept, its queue filled: the kernel drops further connects, as a service
// with a full listen backlog does. serve starts accepting: it answers each
// line with the same line, the queued connections first.
func fullListener(t *testing.T) (addr string, serve func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	f := os.NewFile(uintptr(fd), "full-listener")
	t.Cleanup(func() { _ = f.Close() })
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr = (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	// A backlog of 0 holds one connection; the one after it completes
	// too on some kernels. Fill it until a connect is left waiting.
	for range 4 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	return addr, func() {
		ln, err := net.FileListener(f)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
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
						if _, err := io.WriteString(c, line); err != nil {
							return
						}
					}
				}()
			}
		}()
	}
}

// TestUpstreamFullBacklog: in front of a full service, every client is
// accepted at once and waits on a connect of its own — none waits behind
// another's (Toxiproxy's own accept loop dials inside the loop, so its
// second client was not even accepted) — and the proxy says so; once the
// service accepts again, each pending client reaches it.
func TestUpstreamFullBacklog(t *testing.T) {
	ctx := context.Background()
	s := proxy.NewInProcess()
	t.Cleanup(func() { _ = s.Close(ctx) })
	upstream, serve := fullListener(t)
	listen, err := s.CreateProxy(ctx, "full", "", upstream)
	require.NoError(t, err)
	up := s.(proxy.UpstreamReporter)

	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", listen)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
		require.Eventually(t, func() bool {
			return up.Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), time.Now()) != ""
		}, 10*time.Second, time.Millisecond, "the proxy never took client %d", len(clients))
	}
	for i, c := range clients {
		require.Contains(t, up.Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), time.Now()), "still pending", "client %d", i+1)
	}

	serve()
	for i, c := range clients {
		// The kernel retries each dropped connect within seconds.
		require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
		_, err := io.WriteString(c, "hello\n")
		require.NoError(t, err)
		got, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err, "client %d never reached the service", i+1)
		require.Equal(t, "hello\n", got)
		require.Empty(t, up.Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), time.Now()), "client %d is linked", i+1)
	}
}

// TestUpstreamConnectTimeout: a connect the service never completes is
// given up after the proxy's connect timeout, the client's connection
// closed, and the proxy says why.
func TestUpstreamConnectTimeout(t *testing.T) {
	ctx := context.Background()
	s := proxy.NewInProcess()
	t.Cleanup(func() { _ = s.Close(ctx) })
	proxy.SetConnectTimeout(s, 300*time.Millisecond)
	upstream, _ := fullListener(t)
	listen, err := s.CreateProxy(ctx, "timeout", "", upstream)
	require.NoError(t, err)

	c, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadAll(c) // the proxy closes it once its connect gave up
	require.NoError(t, err)
	require.Contains(t, s.(proxy.UpstreamReporter).Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), time.Now()),
		"timed out after 300ms")
}

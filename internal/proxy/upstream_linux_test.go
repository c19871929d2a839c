package proxy_test

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/proxy"
)

// fullListener is a loopback listener with a backlog of 0 that never
// accepts, its queue filled: the kernel drops further connects, as a
// service with a full listen backlog does.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	// A backlog of 0 holds one connection; the one after it completes
	// too on some kernels. Fill it until a connect is left waiting.
	for range 4 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	return addr
}

// TestUpstreamFullBacklog: in front of a full service, the proxy's first
// client waits on the proxy's connect and the next is not even accepted;
// both reach the proxy and neither the service, and the proxy says so.
func TestUpstreamFullBacklog(t *testing.T) {
	ctx := context.Background()
	s := proxy.NewInProcess()
	t.Cleanup(func() { _ = s.Close(ctx) })
	listen, err := s.CreateProxy(ctx, "full", "", fullListener(t))
	require.NoError(t, err)
	up := s.(proxy.UpstreamReporter)

	dialed := time.Now()
	first, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer first.Close()
	require.Eventually(t, func() bool {
		return up.Upstream(first.LocalAddr().String(), first.RemoteAddr().String(), dialed) != ""
	}, 10*time.Second, time.Millisecond, "the proxy never took the first client")
	require.Contains(t, up.Upstream(first.LocalAddr().String(), first.RemoteAddr().String(), dialed), "still pending")

	next, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer next.Close()
	require.Contains(t, up.Upstream(next.LocalAddr().String(), next.RemoteAddr().String(), time.Now()), "not accepted it yet")
}

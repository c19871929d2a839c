package proxy_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/proxy"
)

// TestUpstreamRefused: a proxy in front of a port nobody listens on takes
// the client's connection and closes it; the proxy says the service
// refused it, where the client saw only EOF.
func TestUpstreamRefused(t *testing.T) {
	ctx := context.Background()
	s := proxy.NewInProcess()
	t.Cleanup(func() { _ = s.Close(ctx) })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	upstream := dead.Addr().String()
	require.NoError(t, dead.Close())

	listen, err := s.CreateProxy(ctx, "refused", "", upstream)
	require.NoError(t, err)
	dialed := time.Now()
	c, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.ReadAll(c) // the proxy closes it once its dial failed
	require.NoError(t, err)

	up := s.(proxy.UpstreamReporter)
	require.Contains(t, up.Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), dialed), "connection refused")
	// A connection to something else is not this server's to judge.
	require.Empty(t, up.Upstream(c.LocalAddr().String(), upstream, dialed))
}

// TestUpstreamLinked: a client the proxy connected to a live service gets
// no reason, however its exchange ends.
func TestUpstreamLinked(t *testing.T) {
	ctx := context.Background()
	s := proxy.NewInProcess()
	t.Cleanup(func() { _ = s.Close(ctx) })
	svc, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer svc.Close()
	listen, err := s.CreateProxy(ctx, "linked", "", svc.Addr().String())
	require.NoError(t, err)

	dialed := time.Now()
	c, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	sc, err := svc.Accept()
	require.NoError(t, err)
	defer sc.Close()
	buf := make([]byte, 1)
	_, err = io.ReadFull(sc, buf) // the byte went through: the link is up
	require.NoError(t, err)
	require.Empty(t, s.(proxy.UpstreamReporter).Upstream(c.LocalAddr().String(), c.RemoteAddr().String(), dialed))
}

package addrgate

import (
	"context"
	"fmt"
	"net"
)

// DefaultListen is where a listener binds when no address is given: a free
// port on loopback.
const DefaultListen = "127.0.0.1:0"

// ListenAddr checks an address to listen on (setting names it) and returns
// the one to bind: "" is [DefaultListen]; a name is resolved as for a
// connection and its first address bound; every interface (":6432",
// "0.0.0.0:6432", "[::]:6432") and any address that is not loopback are
// refused unless remote addresses are allowed, since a listener there
// accepts other machines' connections.
func (g *Gate) ListenAddr(ctx context.Context, addr, setting string) (string, error) {
	g = g.or()
	if addr == "" {
		return DefaultListen, nil
	}
	host, _, err := splitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s %q: want host:port: %w", setting, addr, err)
	}
	if g.cfg.AllowRemote && (host == "" || isUnspecified(host)) {
		return addr, nil // every interface, as asked
	}
	aps, err := g.resolve(ctx, addr, setting, true)
	if err != nil {
		return "", err
	}
	return aps[0].String(), nil
}

func isUnspecified(host string) bool {
	ip, ok := literal(host)
	return ok && ip.IsUnspecified()
}

// Listen opens a TCP listener on the address [Gate.ListenAddr] returns.
func (g *Gate) Listen(ctx context.Context, addr, setting string) (net.Listener, error) {
	a, err := g.ListenAddr(ctx, addr, setting)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", a)
}

package oracle

import (
	"context"
	"net"
	"net/http"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// Net is the way out an oracle's connections take: every host name is
// looked up, and every connection dialled, through it. The harness passes
// its address gate, bound to the setting the address came from
// (effects.dsn, effects.url), so that each host of a multi-host DSN and
// each redirect hop is checked against the loopback rule before a packet
// is sent.
type Net interface {
	// LookupHost returns the addresses a name may be reached at (the
	// connection is then made to one of them), or why it may not be.
	LookupHost(ctx context.Context, host string) ([]string, error)
	// DialContext connects to addr (host:port, or a unix socket path).
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Option configures an oracle.
type Option func(*options)

type options struct{ net Net }

// Through sends the oracle's connections through n. Without it an oracle
// reaches loopback addresses only (what a command line without
// --allow-remote allows).
func Through(n Net) Option { return func(o *options) { o.net = n } }

// netFor is the way out opts give, or the loopback-only gate naming
// setting.
func netFor(setting string, opts []Option) Net {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.net == nil {
		return addrgate.Loopback().For(setting)
	}
	return o.net
}

// redirector is what a [Net] may also do: check a redirect hop before it
// is followed (an [addrgate.Way] does).
type redirector interface {
	CheckRedirect(req *http.Request, via []*http.Request) error
}

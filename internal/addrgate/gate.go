package addrgate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/internal/netaddr"
)

// DefaultHostsFile is read for names when [Config.HostsFile] is empty.
const DefaultHostsFile = "/etc/hosts"

// Resolver looks names up in DNS; [net.DefaultResolver] implements it. The
// gate asks it only with --allow-remote, after the hosts file.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Config configures a [Gate].
type Config struct {
	// AllowRemote is the command line's --allow-remote: addresses off this
	// machine pass, and names the hosts file does not know are looked up
	// in DNS.
	AllowRemote bool
	// HostsFile is where names are looked up first ("" =
	// [DefaultHostsFile]); tests point it at a file of their own.
	HostsFile string
	// Resolver is the DNS lookup used with AllowRemote (nil:
	// [net.DefaultResolver]).
	Resolver Resolver

	_ struct{}
}

// Gate applies the loopback rule (see the package doc). Its methods are
// safe for concurrent use; a nil *Gate is [Loopback]'s gate.
type Gate struct {
	cfg Config

	once     sync.Once
	hosts    map[string][]netip.Addr
	hostsErr error

	// asked keeps what DNS answered (only with AllowRemote): a name is
	// resolved once per gate, so every connection of a run goes where the
	// first one went.
	mu    sync.Mutex
	asked map[string][]netip.Addr
}

// New returns the gate of cfg.
func New(cfg Config) *Gate {
	if cfg.HostsFile == "" {
		cfg.HostsFile = DefaultHostsFile
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	return &Gate{cfg: cfg}
}

var loopback = New(Config{})

// Loopback is the gate of a command line without --allow-remote, reading
// the system's hosts file.
func Loopback() *Gate { return loopback }

func (g *Gate) or() *Gate {
	if g == nil {
		return loopback
	}
	return g
}

// AllowRemote says whether the command line allowed remote addresses.
func (g *Gate) AllowRemote() bool { return g.or().cfg.AllowRemote }

// Resolve resolves addr (host:port) once and returns every address it
// leads to, refusing (a [*NotLoopbackError] naming setting) unless each one
// is loopback or remote addresses are allowed. Connect to the addresses
// returned, not to the name: a later lookup could lead elsewhere.
func (g *Gate) Resolve(ctx context.Context, addr, setting string) ([]netip.AddrPort, error) {
	return g.or().resolve(ctx, addr, setting, false)
}

func (g *Gate) resolve(ctx context.Context, addr, setting string, listen bool) ([]netip.AddrPort, error) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: want host:port: %w", setting, addr, err)
	}
	ips, err := g.lookup(ctx, host, addr, setting, listen)
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip, port)
	}
	return out, nil
}

// lookup returns the addresses of host (display and setting name it in a
// refusal), each one checked.
func (g *Gate) lookup(ctx context.Context, host, display, setting string, listen bool) ([]netip.Addr, error) {
	refuse := func(reason, resolved string) error {
		return &NotLoopbackError{Setting: setting, Addr: display, Resolved: resolved, Reason: reason, Listen: listen, HostsFile: g.cfg.HostsFile}
	}
	if host == "" {
		if !g.cfg.AllowRemote {
			return nil, refuse(ReasonEveryInterface, "")
		}
		return []netip.Addr{netip.IPv4Unspecified()}, nil
	}
	if ip, ok := literal(host); ok {
		switch {
		case g.cfg.AllowRemote || ip.IsLoopback():
			return []netip.Addr{ip}, nil
		case ip.IsUnspecified():
			return nil, refuse(ReasonEveryInterface, "")
		}
		return nil, refuse(ReasonAddress, "")
	}
	ips, err := g.byName(ctx, host)
	if err != nil {
		if errors.Is(err, errNeedsDNS) {
			return nil, refuse(ReasonDNS, "")
		}
		return nil, fmt.Errorf("%s %s: cannot resolve %q, so it cannot be shown to be loopback: %w", setting, display, host, err)
	}
	if !g.cfg.AllowRemote {
		for _, ip := range ips {
			if !ip.IsLoopback() {
				return nil, refuse(ReasonAddress, ip.String())
			}
		}
	}
	return ips, nil
}

// errNeedsDNS: the name is not in the hosts file nor a loopback name.
var errNeedsDNS = errors.New("needs DNS")

// byName resolves a name: the hosts file, the loopback names, then DNS
// only when remote addresses are allowed.
func (g *Gate) byName(ctx context.Context, host string) ([]netip.Addr, error) {
	name := normalize(host)
	if name == "" {
		return nil, fmt.Errorf("%q is not a host name", host)
	}
	g.once.Do(func() { g.hosts, g.hostsErr = readHosts(g.cfg.HostsFile) })
	if ips := g.hosts[name]; len(ips) > 0 {
		return ips, nil
	}
	if LoopbackName(name) {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	if !g.cfg.AllowRemote {
		if g.hostsErr != nil {
			return nil, fmt.Errorf("read %s: %w", g.cfg.HostsFile, g.hostsErr)
		}
		return nil, errNeedsDNS
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if ips, ok := g.asked[name]; ok {
		return ips, nil
	}
	found, err := g.cfg.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(found))
	for _, a := range found {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out = append(out, ip.Unmap().WithZone(a.Zone))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no addresses")
	}
	if g.asked == nil {
		g.asked = map[string][]netip.Addr{}
	}
	g.asked[name] = out
	return out, nil
}

// literal parses an IP literal (brackets and an IPv6 zone allowed), its
// IPv4-mapped form unmapped: ::ffff:127.0.0.1 is 127.0.0.1.
func literal(host string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// normalize is a name as the hosts file and the loopback names compare
// it: lower case, one trailing dot dropped ("localhost." is "localhost").
func normalize(host string) string {
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// LoopbackName says whether host is loopback whatever the machine: an IP
// literal in 127.0.0.0/8 or ::1 (IPv4-mapped included), or "localhost" and
// any "*.localhost" (RFC 6761), a trailing dot allowed. It reads no hosts
// file: validate uses it, where a file must mean the same on every
// machine.
func LoopbackName(host string) bool {
	if ip, ok := literal(host); ok {
		return ip.IsLoopback()
	}
	name := normalize(host)
	return name == "localhost" || (strings.HasSuffix(name, ".localhost") && len(name) > len(".localhost"))
}

// splitHostPort splits addr and parses its port, which must be a number
// (a service name would be one more lookup).
func splitHostPort(addr string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return host, uint16(p), nil
}

// splitHost is net.SplitHostPort reporting only success.
func splitHost(addr string) (string, string, bool) {
	h, p, err := net.SplitHostPort(addr)
	return h, p, err == nil
}

// Dial connects over network to addr through the gate: it resolves addr
// once, refuses what the rule refuses (naming setting), and dials the
// checked addresses in turn until one answers. Unix sockets are local by
// nature and pass as they are.
func (g *Gate) Dial(ctx context.Context, network, addr, setting string) (net.Conn, error) {
	g = g.or()
	var d net.Dialer
	switch network {
	case "unix", "unixpacket":
		return d.DialContext(ctx, network, addr)
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%s %s: network %q: idemchaos dials tcp and unix only", setting, addr, network)
	}
	aps, err := g.Resolve(ctx, addr, setting)
	if err != nil {
		return nil, err
	}
	var first error
	for _, ap := range aps {
		if (network == "tcp4" && !ap.Addr().Is4()) || (network == "tcp6" && !ap.Addr().Is6()) {
			continue
		}
		c, err := d.DialContext(ctx, network, ap.String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%s %s: no %s address", setting, addr, network)
	}
	return nil, first
}

// Way is the gate bound to one setting, shaped for the clients that take
// their own dial and lookup functions (http.Transport, pgconn.Config).
type Way struct {
	g       *Gate
	setting string
}

// For returns the gate's [Way] for connections made for setting (e.g.
// "effects.url"): refusals name it.
func (g *Gate) For(setting string) Way { return Way{g: g.or(), setting: setting} }

// DialContext is [Gate.Dial] for the way's setting (an http.Transport's
// DialContext, a pgconn DialFunc).
func (w Way) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return w.g.Dial(ctx, network, addr, w.setting)
}

// LookupHost resolves host through the gate and returns its checked
// addresses as strings (a pgconn LookupFunc): the client then dials those.
func (w Way) LookupHost(ctx context.Context, host string) ([]string, error) {
	ips, err := w.g.or().lookup(ctx, host, host, w.setting, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out, nil
}

// CheckRedirect is an http.Client's CheckRedirect that puts every redirect
// hop through the gate before it is followed: a 302 to another machine is
// refused, not followed. It stops after 10 hops, as net/http does.
func (w Way) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if _, err := w.g.Resolve(req.Context(), netaddr.HostPort(req.URL), w.setting+" (redirected to "+req.URL.Redacted()+")"); err != nil {
		return err
	}
	return nil
}

// HTTPClient is an http.Client whose every connection and redirect hop goes
// through the gate for setting, never through an environment's HTTP
// proxy, each request bounded by timeout (0: none).
func (g *Gate) HTTPClient(setting string, timeout time.Duration) *http.Client {
	w := g.For(setting)
	return &http.Client{
		Transport:     &http.Transport{Proxy: nil, DialContext: w.DialContext, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second},
		CheckRedirect: w.CheckRedirect,
		Timeout:       timeout,
	}
}

// PinURL checks raw (an http or https URL; setting names it) and returns it
// with its host replaced by the first checked address, for a client that
// takes no dial function: it then connects where the gate said, and an
// environment's HTTP proxy is never used for a loopback address.
func (g *Gate) PinURL(ctx context.Context, raw, setting string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%s %q: want http(s)://host:port", setting, raw)
	}
	aps, err := g.Resolve(ctx, netaddr.HostPort(u), setting)
	if err != nil {
		return nil, err
	}
	pinned := *u
	pinned.Host = aps[0].String()
	return &pinned, nil
}

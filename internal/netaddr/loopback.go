package netaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrNotLoopback is matched (errors.Is) by every [NotLoopbackError].
var ErrNotLoopback = errors.New("target is not a loopback address")

// NotLoopbackError refuses a target outside 127.0.0.0/8, ::1 and
// "localhost" when remote targets were not allowed: idemchaos sends faults
// and load, and must not do so to someone else's machine by accident.
type NotLoopbackError struct {
	// Addr is the refused host:port.
	Addr string
	// Setting is where it came from, e.g. "--target", "--db-addr",
	// "effects.url" ("" for a target).
	Setting string
	// Resolved is the non-loopback address a name resolved to ("" when
	// Addr itself is one).
	Resolved string
}

// Error says what was refused and how to allow it.
func (e *NotLoopbackError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "target"
	}
	if e.Resolved != "" {
		return fmt.Sprintf("%s %s resolves to %s, which is not a loopback address; pass --allow-remote to send traffic there", setting, e.Addr, e.Resolved)
	}
	return fmt.Sprintf("%s %s is not a loopback address; pass --allow-remote to send traffic there", setting, e.Addr)
}

// Is makes errors.Is(err, [ErrNotLoopback]) true.
func (e *NotLoopbackError) Is(target error) bool { return target == ErrNotLoopback }

// Resolver looks up the addresses of a host name; [net.DefaultResolver]
// implements it, and tests inject another (an /etc/hosts that maps
// "localhost" off the machine).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// CheckLoopback returns a [*NotLoopbackError] unless addr's host is a
// loopback IP (127.0.0.0/8, ::1). A name is refused here: only
// [ResolveLoopback] can tell where it leads.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &NotLoopbackError{Addr: addr}
}

// ResolveLoopback resolves addr's host with r (nil: the system's resolver)
// and returns every address it leads to as host:port, refusing (with a
// [*NotLoopbackError] naming setting, e.g. "--db-addr") unless each one is
// loopback: a name is trusted for what it resolves to, never for what it
// says ("localhost" mapped elsewhere in /etc/hosts would send traffic off
// the machine). Callers connect to the returned addresses, so a later
// lookup cannot lead somewhere else.
func ResolveLoopback(ctx context.Context, r Resolver, addr, setting string) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: want host:port: %w", setting, addr, err)
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		if !ip.IsLoopback() {
			return nil, &NotLoopbackError{Addr: addr, Setting: setting}
		}
		return []string{net.JoinHostPort(ip.String(), port)}, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("%s %s: cannot resolve %q, so it cannot be shown to be loopback: %v", setting, addr, host, err)
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return nil, &NotLoopbackError{Addr: addr, Setting: setting, Resolved: ip.IP.String()}
		}
		out = append(out, net.JoinHostPort(ip.IP.String(), port))
	}
	return out, nil
}

package harness

import (
	"net/url"
	"strings"

	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

// MoveOrigin returns u on to's origin when u is on from's origin (scheme,
// host and port, default ports made explicit): an effects.url on the
// scenario's own target is the same service's effects endpoint, and moves
// with it when the run targets the service elsewhere (--target,
// [ExternalEnv]).
func MoveOrigin(u, from, to string) (string, bool) {
	pu, err1 := url.Parse(u)
	pf, err2 := url.Parse(from)
	pt, err3 := url.Parse(to)
	if err1 != nil || err2 != nil || err3 != nil || origin(pu) != origin(pf) || pt.Host == "" {
		return u, false
	}
	// The path and query stay as written: re-encoding them would turn an
	// http oracle's {{tenant}} into %7B%7Btenant%7D%7D, never rendered.
	rest := u[strings.Index(u, "://")+3:]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	return pt.Scheme + "://" + pt.Host + rest, true
}

func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(netaddr.HostPort(u))
}

// retargeted is a copy of s pointed at the service at to, its effects.url
// moved with the target when it was on the scenario's own origin; s itself
// (a caller's inline scenario) is left as it is.
func retargeted(s *scenarios.Scenario, to string) *scenarios.Scenario {
	if to == "" || s.Target.URL == "" || s.Target.URL == to {
		return s
	}
	c := *s
	if moved, ok := MoveOrigin(c.Effects.URL, s.Target.URL, to); ok && c.Effects.URL != "" {
		c.Effects.URL = moved
	}
	c.Target.URL = to
	return &c
}

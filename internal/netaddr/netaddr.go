// Package netaddr holds the address helpers several layers share: the
// address a URL connects to. It imports nothing of the module, so the
// command, the harness and the infrastructure can all use the one
// implementation.
package netaddr

import (
	"net"
	"net/url"
	"strings"
)

// HostPort is the URL's host:port with the scheme's default port filled in
// (443 for https, 80 otherwise): the address a request to u connects to.
func HostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if strings.EqualFold(u.Scheme, "https") {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Package netaddr holds the address helpers several layers share: the
// address a URL connects to ([HostPort]) and a free loopback port
// ([FreePort]). It imports nothing of the module, so the command, the
// harness and the infrastructure can all use it. The loopback rule is not
// here: it is internal/addrgate's, the one gate every connection and
// listener goes through.
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

// FreePort asks the kernel for a free loopback TCP port. The port is free
// when FreePort returns, not reserved: a caller that starts a server on it
// must be ready to retry when another process took it meanwhile.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

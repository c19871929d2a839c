package addrgate

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// PublishIP is the host address docker is asked to publish container
// ports on: the published ports carry the harness's proxies and a
// Postgres that trusts every client, so they must not be reachable from
// other machines.
const PublishIP = "127.0.0.1"

// Published checks one port binding the docker daemon reports (its HostIP
// and HostPort) and returns the address to connect to. A binding on every
// interface (HostIP "", "0.0.0.0" or "::", what a daemon's default "ip"
// setting or an older engine may do whatever was asked) or on any
// non-loopback address is refused: no flag allows it, since nothing in a
// docker run needs other machines to reach it.
func Published(hostIP, hostPort string) (string, error) {
	addr := net.JoinHostPort(hostIP, hostPort)
	if _, _, err := splitHostPort(addr); err != nil {
		return "", fmt.Errorf("docker published %q: %w", addr, err)
	}
	ip, ok := literal(hostIP)
	switch {
	case hostIP == "" || (ok && ip.IsUnspecified()):
		return "", &NotLoopbackError{Setting: "docker published port", Addr: addr, Reason: ReasonEveryInterface, Listen: true, Instead: publishedInstead}
	case !ok || !ip.IsLoopback():
		return "", &NotLoopbackError{Setting: "docker published port", Addr: addr, Reason: ReasonAddress, Listen: true, Instead: publishedInstead}
	}
	return net.JoinHostPort(ip.String(), hostPort), nil
}

const publishedInstead = "idemchaos publishes on " + PublishIP + " only: check the daemon's \"ip\" setting (daemon.json) or what rewrites port bindings"

// DockerHost checks the daemon address the docker client would use
// (DOCKER_HOST; "" is the local socket): a unix socket, or tcp to
// loopback. A daemon on another machine is refused, since the ports it
// publishes on its loopback are not this machine's and the API calls
// themselves would leave it.
func DockerHost(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("DOCKER_HOST %q: %w", v, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "unix", "npipe":
		return nil
	case "tcp", "http", "https":
		if !LoopbackName(u.Hostname()) {
			return &NotLoopbackError{Setting: "DOCKER_HOST", Addr: u.Host, Reason: ReasonAddress, Instead: "idemchaos talks only to a docker daemon on this machine (unix:// or tcp://127.0.0.1)"}
		}
		return nil
	}
	return fmt.Errorf("DOCKER_HOST %q: scheme %q: idemchaos talks to a local daemon (unix:// or tcp://127.0.0.1)", v, u.Scheme)
}

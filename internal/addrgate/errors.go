package addrgate

import (
	"errors"
	"fmt"
)

// ErrNotLoopback is matched (errors.Is) by every [NotLoopbackError].
var ErrNotLoopback = errors.New("not a loopback address")

// Reasons a [NotLoopbackError] gives.
const (
	// ReasonAddress: the address (or one a name resolved to) is not
	// loopback.
	ReasonAddress = "address"
	// ReasonDNS: the name is neither in the hosts file nor a loopback
	// name, and DNS is asked only with --allow-remote.
	ReasonDNS = "dns"
	// ReasonEveryInterface: 0.0.0.0, :: or no host at all.
	ReasonEveryInterface = "every-interface"
)

// NotLoopbackError refuses an address the loopback rule does not let
// through. Nothing was sent (or bound) when it is returned.
type NotLoopbackError struct {
	// Setting is where the address came from, e.g. "--target",
	// "--db-addr", "effects.dsn"; "" reads as "address".
	Setting string
	// Addr is the refused host:port as given.
	Addr string
	// Resolved is the non-loopback address a name resolved to ("" when
	// Addr itself is one, or when it was never looked up).
	Resolved string
	// Reason is one of the Reason constants.
	Reason string
	// Listen says the address was one to listen on, not to connect to.
	Listen bool
	// HostsFile is the hosts file that was read (for [ReasonDNS]).
	HostsFile string
	// Instead, when set, replaces "pass --allow-remote ...": for what no
	// flag allows (docker's published ports, a remote docker daemon).
	Instead string
}

// Error says what was refused, why, and how to allow it.
func (e *NotLoopbackError) Error() string {
	setting := e.Setting
	if setting == "" {
		setting = "address"
	}
	allow := "pass --allow-remote to send traffic there"
	if e.Listen {
		allow = "pass --allow-remote to accept connections from other machines"
	}
	if e.Instead != "" {
		allow = e.Instead
	}
	switch {
	case e.Reason == ReasonDNS:
		host := e.Addr
		if h, _, ok := splitHost(e.Addr); ok {
			host = h
		}
		return fmt.Sprintf("%s %s: %q is not in %s and is not a loopback name; finding it needs DNS, which idemchaos asks only with --allow-remote (nothing was sent)", setting, e.Addr, host, e.HostsFile)
	case e.Reason == ReasonEveryInterface && e.Listen:
		return fmt.Sprintf("%s %s listens on every interface; give a loopback address (127.0.0.1:PORT), or %s", setting, e.Addr, allow)
	case e.Reason == ReasonEveryInterface:
		return fmt.Sprintf("%s %s is not a loopback address (it stands for every interface; connect to 127.0.0.1 instead); %s", setting, e.Addr, allow)
	case e.Resolved != "":
		return fmt.Sprintf("%s %s resolves to %s, which is not a loopback address; %s", setting, e.Addr, e.Resolved, allow)
	}
	return fmt.Sprintf("%s %s is not a loopback address; %s", setting, e.Addr, allow)
}

// Is makes errors.Is(err, [ErrNotLoopback]) true.
func (e *NotLoopbackError) Is(target error) bool { return target == ErrNotLoopback }

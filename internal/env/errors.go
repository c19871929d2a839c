package env

import (
	"errors"
	"fmt"
)

// ErrNotLoopback is matched (errors.Is) by every [NotLoopbackError].
var ErrNotLoopback = errors.New("target is not a loopback address")

// ErrUnreachable is matched (errors.Is) by every [UnreachableError].
var ErrUnreachable = errors.New("target unreachable")

// ErrNoEnvironment means auto selection found nothing to run against; the
// wrapping error says what to install or how to point at an external
// service.
var ErrNoEnvironment = errors.New("no environment available")

// ErrDockerUnavailable is returned for the docker environment, which is not
// built yet.
var ErrDockerUnavailable = errors.New("docker environment not available (not built yet); use --env local or --env external")

// ErrUnknownKind means an environment name is not one of auto, local,
// external, docker.
var ErrUnknownKind = errors.New("unknown environment kind")

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

// UnreachableError means a TCP connection to the target could not be made
// within the dial deadline.
type UnreachableError struct {
	// Addr is the host:port dialled.
	Addr string
	// Err is the dial error.
	Err error
}

// Error names the target and the cause.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("target %s is unreachable: %v", e.Addr, e.Err)
}

// Unwrap returns the dial error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, [ErrUnreachable]) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

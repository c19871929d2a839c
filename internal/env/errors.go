package env

import (
	"errors"
	"fmt"
)

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

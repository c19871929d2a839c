package faults

import "errors"

// ErrUnknownKind is returned by [New] for a kind nobody registered.
var ErrUnknownKind = errors.New("unknown fault kind")

// ErrInvalidParams is wrapped by every Validate error.
var ErrInvalidParams = errors.New("invalid fault parameters")

// ErrUnsupported means the world lacks what the fault needs (no standby for
// replica-lag, no database link for slow-db, no process control and no hook).
var ErrUnsupported = errors.New("fault not supported by this environment")

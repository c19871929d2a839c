package runenv

import "errors"

// ErrClosed is returned by [Run.NewDir] after [Run.Close].
var ErrClosed = errors.New("run directory closed")

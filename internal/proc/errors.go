package proc

import "errors"

// ErrExited means the process exited before it became ready.
var ErrExited = errors.New("process exited before it was ready")

// ErrNotRunning is returned by [Process.Kill] when no incarnation of the
// process is running.
var ErrNotRunning = errors.New("process not running")

// ErrReadyTimeout means the readiness check did not pass in time.
var ErrReadyTimeout = errors.New("process not ready in time")

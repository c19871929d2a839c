package history

import (
	"errors"
	"fmt"
)

// ErrUnsupportedVersion is wrapped by the error a [Reader] returns when the
// meta event names a format version this reader does not know.
var ErrUnsupportedVersion = errors.New("unsupported history version")

// LineError says which line of a history was wrong and what was wrong with it.
type LineError struct {
	// Line is the 1-based line number in the input.
	Line int
	// Msg says what was wrong, in words a person who wrote the file can act on.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error as "line N: message".
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Unwrap returns the underlying cause.
func (e *LineError) Unwrap() error { return e.Err }

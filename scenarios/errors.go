package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalid is wrapped by every [Error]: the scenario file is not valid.
var ErrInvalid = errors.New("invalid scenario")

// Error is one problem of a scenario file, at the position of the YAML node
// it is about. Its text is "file:line:col: message", the form editors and
// CI annotations link to.
type Error struct {
	File string
	// Line and Col are 1-based.
	Line, Col int
	// Msg says what is wrong and what was expected.
	Msg string
	// Err is the underlying cause when there is one (e.g. a fault's
	// Validate error wrapping faults.ErrInvalidParams), else nil.
	Err error
}

// Error returns "file:line:col: message".
func (e Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// Unwrap returns ErrInvalid and the cause, so errors.Is works on both.
func (e Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}

// Errors is every problem found in one scenario file, sorted by position.
// The loader reports all of them at once rather than stopping at the
// first, so one edit-validate round fixes a whole file.
type Errors struct {
	List []Error
}

// Error returns one "file:line:col: message" line per problem.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, x := range e.List {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so errors.As finds an [Error] and
// errors.Is finds [ErrInvalid] and each cause.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}

// sort orders the list by position and drops exact duplicates (a schema
// and a semantic check may say the same thing of one node).
func (e *Errors) sort() {
	sort.SliceStable(e.List, func(i, j int) bool {
		a, b := e.List[i], e.List[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	out := e.List[:0]
	for _, x := range e.List {
		if n := len(out); n > 0 && x.Line == out[n-1].Line && x.Col == out[n-1].Col && x.Msg == out[n-1].Msg {
			continue
		}
		out = append(out, x)
	}
	e.List = out
}

package faults

import "reflect"

// A fault kind says what it needs from the harness through the small
// optional interfaces below, each read in one place: the harness never
// names a kind. A kind that implements none of them needs nothing but the
// proxies ([World.AddToxic], [World.PrivatePath]).

// HookUser is implemented by faults that act on a user's service through
// the scenario's hook commands. Hooks names them by their scenario keys
// (kill, restart, kill_consumer, restart_consumer, purge, replica_delay),
// for the parameters the fault was built with; a scenario for an external
// target that lacks one is refused before anything starts.
type HookUser interface {
	Hooks() []string
}

// StandbyUser is implemented by faults that act on a streaming standby of
// the local database: the environment starts one when a scenario has such
// a fault.
type StandbyUser interface {
	NeedsStandby() bool
}

// Spanning is implemented by [Aimed] faults that act on more than one
// attempt of the intent they hit: Attempts consecutive attempts, from the
// one the fault's when names (a fault that loses a response and then holds
// the retry back spans two).
type Spanning interface {
	Attempts() int
}

// Timeable is implemented by [Aimed] faults that also work timed, on a
// whole link: such a fault is aimed when its when picks intents (a fraction
// or every n-th), and timed (at, for) otherwise.
type Timeable interface {
	CanBeTimed() bool
}

// HookKilled is implemented by a [Process] that the scenario's hook kills
// (a user's service): it has no failpoints of its own, so a crash aimed at
// an attempt kills it while the attempt's answer is held back rather than
// arming a point of its request path.
type HookKilled interface {
	HookKilled() bool
}

// HooksOf lists the hooks f needs on an external target (nil for none).
func HooksOf(f Fault) []string {
	if h, ok := f.(HookUser); ok {
		return h.Hooks()
	}
	return nil
}

// NeedsStandby says whether f needs a streaming standby.
func NeedsStandby(f Fault) bool {
	s, ok := f.(StandbyUser)
	return ok && s.NeedsStandby()
}

// AttemptsOf is how many consecutive attempts an aimed fault acts on (1
// unless it is [Spanning]).
func AttemptsOf(f Fault) int {
	if s, ok := f.(Spanning); ok {
		return max(s.Attempts(), 1)
	}
	return 1
}

// IsAimed says whether f acts on the attempts of the intents a plan picks
// rather than at a time. picks says whether the fault's when picks intents
// (a fraction or every n-th); it decides for a [Timeable] fault.
func IsAimed(f Fault, picks bool) bool {
	if _, ok := f.(Clicker); ok {
		return true
	}
	if _, ok := f.(Aimed); !ok {
		return false
	}
	if t, ok := f.(Timeable); ok && t.CanBeTimed() {
		return picks
	}
	return true
}

// Clone returns a fresh copy of f with the same parameters: a fault value
// decoded and validated once serves every run that needs one of its own
// (a fault may keep state while it runs).
func Clone(f Fault) Fault {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return f
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(Fault)
}

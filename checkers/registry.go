package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The suites: the default sets of invariants a kind of history is judged by.
const (
	// SuiteServer is the invariants of DESIGN §4, judged over a history of a
	// service under test: what [Names] and [Default] return.
	SuiteServer = "server"
	// SuiteClient is the invariants judged over a history of a client under
	// test (mode "client").
	SuiteClient = "client"
)

// Registration is one invariant's entry in the registry: everything the
// package needs to know about a checker besides the checker itself, so that
// a new invariant is one file (plus its goldens) and no list elsewhere.
type Registration struct {
	// Name is the invariant's name, as its Checker's Name returns it.
	Name string
	// New returns the checker judging with the options.
	New func(opts ...Option) Checker
	// Suites places the invariant in the suites it belongs to, at a
	// position in each (smaller first): {SuiteServer: 1}. An invariant in
	// no suite is found by [ByName] but run only when named.
	Suites map[string]int
	// Start ranks the check among those started first when checks run side
	// by side (1 first; 0, the default, after every ranked one): a check
	// that builds what others wait for, or a long one needing none of it,
	// is best started early.
	Start int
}

var (
	checkersMu sync.RWMutex
	registered = map[string]Registration{}
)

// Register adds an invariant, usually from an init function in the file
// that implements it. Registering a name twice, or one whose checker
// answers to another name, panics: two files claiming one name is a bug.
func Register(r Registration) {
	if r.New == nil {
		panic("checkers: invariant registered without New: " + r.Name)
	}
	if got := r.New().Name(); got != r.Name {
		panic(fmt.Sprintf("checkers: invariant %q registered with a checker named %q", r.Name, got))
	}
	checkersMu.Lock()
	defer checkersMu.Unlock()
	if _, dup := registered[r.Name]; dup {
		panic("checkers: invariant registered twice: " + r.Name)
	}
	registered[r.Name] = r
}

// Names lists the invariants of DESIGN §4 (the server suite) in their
// canonical order.
func Names() []string { return SuiteNames(SuiteServer) }

// SuiteNames lists the invariants of a suite in their canonical order, or
// none for an unknown suite.
func SuiteNames(suite string) []string {
	checkersMu.RLock()
	defer checkersMu.RUnlock()
	var names []string
	for n, r := range registered {
		if _, ok := r.Suites[suite]; ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(registered[a].Suites[suite], registered[b].Suites[suite]), cmp.Compare(a, b))
	})
	return names
}

// Known lists every registered invariant: the server suite in its order,
// then the rest by name.
func Known() []string {
	names := Names()
	checkersMu.RLock()
	var rest []string
	for n := range registered {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	checkersMu.RUnlock()
	slices.Sort(rest)
	return append(names, rest...)
}

// ByName returns the checker of the named invariant.
func ByName(name string, opts ...Option) (Checker, error) {
	checkersMu.RLock()
	r, ok := registered[name]
	checkersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownInvariant, name, strings.Join(Known(), ", "))
	}
	return r.New(opts...), nil
}

// startRank is the rank a check is started at (see [Registration.Start]):
// unranked and unregistered checks come after every ranked one.
func startRank(name string) int {
	checkersMu.RLock()
	defer checkersMu.RUnlock()
	if r := registered[name].Start; r > 0 {
		return r
	}
	return 1 << 30
}

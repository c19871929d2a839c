package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Fault is one fault kind with its parameters. Parameters are exported
// fields with yaml/json tags; a scenario decodes into a fresh value from
// [New], then calls Validate before anything starts.
type Fault interface {
	// Kind is the DESIGN name, e.g. "response-drop".
	Kind() string
	// Validate checks the parameters and fills in defaults.
	Validate() error
	// Apply makes the fault real in w. It may block (a crash waits for the
	// process to die and come back) but returns when ctx ends.
	Apply(ctx context.Context, w World) error
	// Heal undoes Apply. It is safe to call without Apply, and twice.
	Heal(ctx context.Context, w World) error
}

// Attempt describes an attempt an [Aimed] fault is asked to hit.
type Attempt struct {
	Op     int64
	Intent string
	Tenant string
	Key    string
	Number int
	Click  int
}

// Route is the path of one attempt: where to send it, on a connection of its
// own, and what to tear down after.
type Route struct {
	BaseURL string
	Fresh   bool
	Done    func()
}

// Aimed is implemented by faults that hit single attempts the plan chose.
type Aimed interface {
	Fault
	// Route makes the faulted path for a, records the firing and returns it.
	Route(ctx context.Context, w World, a Attempt) (Route, error)
}

// Clicker is implemented by faults that shape the plan: the harness sends
// Copies copies of the first attempt of the intents it picks, within Spread.
type Clicker interface {
	Fault
	Clicks() (copies int, spread time.Duration)
}

// Blocking is implemented by faults whose Apply waits for something to
// happen (a crash waits for the process to reach its point). Arm puts in
// place what must be there before traffic starts; Apply then only waits.
// The harness arms a fault due at the start of a step before the first
// request, so a short step cannot slip past it.
type Blocking interface {
	Fault
	Arm(ctx context.Context, w World) error
}

// Toxic is a Toxiproxy toxic on a link (toxicity is always 1: the harness
// owns all randomness).
type Toxic struct {
	Name       string
	Type       string
	Stream     string // "upstream" or "downstream"
	Attributes map[string]any
}

// Link names a network path the harness proxies.
type Link string

// The links a world may have.
const (
	// ServiceLink is client → service.
	ServiceLink Link = "service"
	// DatabaseLink is service → Postgres.
	DatabaseLink Link = "db"
)

// Process is a supervised process a fault can kill and restart.
type Process interface {
	// Kill sends SIGKILL (or runs the kill hook) and waits until it is dead.
	Kill(ctx context.Context) error
	// Restart starts it again and waits until it is ready.
	Restart(ctx context.Context) error
	// Exited is closed when the current incarnation dies.
	Exited() <-chan struct{}
}

// World is what faults act on. The harness implements it per environment.
type World interface {
	// AddToxic and RemoveToxic change a shared link for every connection.
	AddToxic(ctx context.Context, l Link, t Toxic) error
	RemoveToxic(ctx context.Context, l Link, name string) error
	// PrivatePath opens a new proxy to the link's upstream carrying toxics,
	// for one attempt alone. It returns the proxy's host:port and a teardown.
	PrivatePath(ctx context.Context, l Link, toxics ...Toxic) (addr string, remove func(context.Context) error, err error)
	// ServiceURL is the service's own base URL, behind no fault.
	ServiceURL() string
	// Process returns "service" or "consumer", or nil when the world has none.
	Process(name string) Process
	// Failpoint arms a named failpoint of a process (action pause, crash or
	// off; count 0 = unlimited). ErrUnsupported when there are none.
	Failpoint(ctx context.Context, process, point, action string, count int) error
	// Purge asks the service to purge expired idempotency records now
	// (ErrUnsupported when it cannot).
	Purge(ctx context.Context) error
	// SetReplicaDelay sets the standby's apply delay (ErrUnsupported without one).
	SetReplicaDelay(ctx context.Context, d time.Duration) error
	// Record writes a fault event: action "fire" or "heal", op 0 for none.
	Record(kind, action string, op int64, detail any)
	// Rand is the run's single seeded source.
	Rand() *rand.Rand
}

var (
	regMu    sync.RWMutex
	registry = map[string]func() Fault{}
)

// Register adds a fault kind. proto must return a fresh value on every call.
// Registering a kind twice panics: two files claiming one name is a bug.
func Register(kind string, proto func() Fault) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[kind]; dup {
		panic("faults: kind registered twice: " + kind)
	}
	if got := proto().Kind(); got != kind {
		panic(fmt.Sprintf("faults: kind %q registered with a value of kind %q", kind, got))
	}
	registry[kind] = proto
}

// New returns a fresh fault of the kind with default parameters.
func New(kind string) (Fault, error) {
	regMu.RLock()
	proto, ok := registry[kind]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownKind, kind, Kinds())
	}
	return proto(), nil
}

// Kinds lists the registered kinds in name order.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func invalid(kind, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidParams, kind, fmt.Sprintf(format, args...))
}

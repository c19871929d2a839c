package sut

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Environment is a started environment as the run loop uses it: the
// Toxiproxy every fault acts through, the standby replica faults lag, and
// the systems under test it starts, one per run.
type Environment interface {
	// Proxies is the Toxiproxy the environment's faults go through.
	Proxies() proxy.Server
	// Standby is the streaming standby of the reference's database, or nil
	// (never a typed nil).
	Standby() ReplicaDelayer
	// StartTarget starts a fresh system under test for one run.
	StartTarget(ctx context.Context, spec TargetSpec) (*Target, error)
	// Close stops everything the environment started and removes it.
	Close(ctx context.Context) error
}

// DatabaseProxied is an environment that proxies a user's service's
// database, which the user must point the service at for database faults
// to reach it.
type DatabaseProxied interface {
	// DatabaseProxyAddr is where that proxy listens ("" for none).
	DatabaseProxyAddr() string
}

// HarnessDatabase is an environment that runs a database of its own (the
// reference's): a run that failed can then tell the harness's database
// dying from anything the service did.
type HarnessDatabase interface {
	// DatabaseDied says how the database stopped, nil while it runs.
	DatabaseDied() error
}

// ReplicaDelayer is a standby whose apply delay can change at run time
// (the local one, or the docker environment's).
type ReplicaDelayer interface {
	SetApplyDelay(ctx context.Context, d time.Duration) error
}

// Config is everything an environment may need to start, decided by
// harness.Open from its options and the scenarios; each environment reads
// its own fields.
type Config struct {
	// Standby: the reference's database needs a streaming standby (local,
	// docker).
	Standby bool
	// TargetURL, DatabaseAddr and DatabaseListen describe a user's
	// service (external).
	TargetURL      string
	DatabaseAddr   string
	DatabaseListen string
	// Gate is the address gate of the run (the command line's
	// --allow-remote, never a scenario's): every address an environment
	// connects to or listens on goes through it (nil: loopback only).
	Gate *addrgate.Gate
	// ToxiproxyURL drives that toxiproxy-server instead of the in-process
	// Toxiproxy (local, external).
	ToxiproxyURL string
	// PGImage, ToxiproxyImage and ReferenceImage choose the images
	// (docker; "" = its defaults).
	PGImage, ToxiproxyImage, ReferenceImage string
}

// Opener starts an environment.
type Opener func(ctx context.Context, cfg Config) (Environment, error)

var registry struct {
	mu      sync.Mutex
	openers map[string]Opener
}

// Register makes an environment available under name. It is called from
// the init of the environment's own file or package; a second
// registration of one name panics, as faults' does.
func Register(name string, open Opener) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.openers == nil {
		registry.openers = map[string]Opener{}
	}
	if _, dup := registry.openers[name]; dup {
		panic(fmt.Sprintf("sut: environment %q registered twice", name))
	}
	registry.openers[name] = open
}

// Lookup returns the opener registered under name.
func Lookup(name string) (Opener, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	o, ok := registry.openers[name]
	return o, ok
}

// Names lists the registered environments, sorted.
func Names() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]string, 0, len(registry.openers))
	for n := range registry.openers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TargetSpec is what one run asks its environment to start, resolved from
// the scenario before anything starts.
type TargetSpec struct {
	// Target is the scenario's target (reference, url or image).
	Target scenarios.Target
	// Mutant is the reference's mutant ("" for the correct service).
	Mutant string
	// MutantStandby and MutantConsumer say the mutant needs a standby or
	// a consumer.
	MutantStandby, MutantConsumer bool
	// Tokens map tenants to their bearer tokens.
	Tokens map[string]string
	// EffectsDSN is where a user's service's effects are read ("" for
	// none, or the target's own database).
	EffectsDSN string
	// ExecuteKeyless starts the reference executing keyless POSTs, each
	// a new order (a client scenario's upstream).
	ExecuteKeyless bool
}

// Target is a started system under test: where clients send traffic,
// where the service really is, and how to reach its processes and its
// effects.
type Target struct {
	// ClientURL is the way through the service proxy: what the driver uses.
	ClientURL string
	// ServiceURL is the service itself, behind no fault.
	ServiceURL string
	// ServiceProxy and DatabaseProxy name the proxies in front of the
	// service and of its database ("" for none).
	ServiceProxy, DatabaseProxy string
	// DSN is the direct DSN of the effect oracle ("" for none).
	DSN string
	// Upstream is the service's address as the proxies see it, when that
	// differs from ServiceURL's host (a container on the docker network).
	Upstream string
	// Processes are the environment's handles on the target's processes
	// ("service", "consumer"), shared by every fault of the run.
	Processes map[string]faults.Process
	// DebugURLs map a process to the base URL of its failpoint endpoint.
	DebugURLs map[string]string
	// Close stops the target.
	Close func(ctx context.Context) error
}

// HasConsumer says whether an outbox consumer runs beside the service:
// the effects are read once it has drained the queue, or a redelivery
// after its restart would be missed.
func (t *Target) HasConsumer() bool { return t.Processes["consumer"] != nil }

// Expose puts the service proxy of database db in front of upstream: the
// driver's way to the service (ClientURL), where the service faults act.
func (t *Target) Expose(ctx context.Context, px proxy.Server, db, upstream string) error {
	t.ServiceProxy = "svc-" + db
	listen, err := px.CreateProxy(ctx, t.ServiceProxy, "", upstream)
	if err != nil {
		return err
	}
	t.ClientURL = "http://" + listen
	return nil
}

package scenarios

import (
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
)

// Scenario is one YAML scenario file, decoded and validated, defaults filled
// in. docs/scenarios.md ("Every field, with its default") documents every
// field; get one from [Load] or [Parse], which fill the defaults each field
// names.
type Scenario struct {
	// File is where the scenario was loaded from ("" for inline scenarios).
	File string `yaml:"-" json:"-"`
	// Env holds the environment variables the file's ${NAME} references
	// read when it was loaded, and their values ("" for unset): a replay
	// must set them alike to run the same scenario.
	Env map[string]string `yaml:"-" json:"-"`
	// Name names the scenario in reports and histories (default: the file
	// name without its extension).
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`

	Target Target `yaml:"target" json:"target"`
	// Client, when set, makes this a client scenario: the traffic comes
	// from the user's command, once per intent, through a fault proxy of
	// its own in front of the upstream (the target; the reference by
	// default). See [Client].
	Client     *Client     `yaml:"client" json:"client,omitempty"`
	Endpoint   Endpoint    `yaml:"endpoint" json:"endpoint"`
	Contract   Contract    `yaml:"contract" json:"contract"`
	Traffic    Traffic     `yaml:"traffic" json:"traffic"`
	Faults     []FaultSpec `yaml:"faults" json:"faults,omitempty"`
	Effects    Effects     `yaml:"effects" json:"effects"`
	Invariants []Invariant `yaml:"invariants" json:"invariants"`
	Hooks      Hooks       `yaml:"hooks" json:"hooks,omitempty"`
	// Steps run in order; each may override traffic and faults and say what
	// it expects. A scenario without steps is one step: traffic + faults,
	// expecting clean (see [Scenario.EffectiveSteps]).
	Steps []Step `yaml:"steps" json:"steps,omitempty"`

	// Broker, Consumer and Messages make a consumer scenario
	// (docs/test-your-consumer.md): no target, a user's consumer on a
	// broker the harness starts, the plan's messages published to it and
	// its effects read through the scenario's oracle.
	Broker   *Broker   `yaml:"broker" json:"broker,omitempty"`
	Consumer *Consumer `yaml:"consumer" json:"consumer,omitempty"`
	Messages *Messages `yaml:"messages" json:"messages,omitempty"`

	// ContractOverride, when set, is the contract the run judges by instead
	// of the one the file describes: `run`'s contract flags set it, so a
	// run and a later `check` with the same flags judge alike.
	ContractOverride *checkers.Contract `yaml:"-" json:"-"`

	// at holds the file positions of the settings a run may refuse after
	// loading (see [Scenario.Where]).
	at map[string]string

	_ struct{}
}

// placed are the settings whose positions [Scenario.Where] keeps: the ones
// the harness may refuse at run time (an address off the machine, a file
// declaring it needs --allow-remote), which must be pointed at in the file
// like a validation error. A key's position for a flag, its value's for an
// address.
var placed = map[string]bool{"target.allow_remote": true, "target.url": false, "effects.dsn": false, "effects.url": false}

// Where is "file:line:col" of field (a dotted path such as "effects.dsn",
// one of those a run may refuse), for errors found after loading; the file
// name, or the scenario's name for one built in Go, when the position is
// not known.
func (s *Scenario) Where(field string) string {
	if p, ok := s.at[field]; ok {
		return p
	}
	if s.File != "" {
		return s.File
	}
	return s.Name
}

// Broker is the broker of a consumer scenario.
type Broker struct {
	// Kind is the broker: nats (JetStream, embedded), rabbitmq or redis.
	Kind string `yaml:"kind" json:"kind"`
	// AckWait is how long the broker waits for an ack before it delivers
	// again (default 1s in scenarios).
	AckWait time.Duration `yaml:"ack_wait" json:"ack_wait,omitempty"`
	_       struct{}
}

// Consumer is the user's consumer a consumer scenario starts.
type Consumer struct {
	// Command is the program and its arguments (no shell).
	Command []string `yaml:"command" json:"command"`
	// Instances is how many copies run side by side (default 1).
	Instances int `yaml:"instances" json:"instances,omitempty"`
	// Env is added to the consumer's environment, beside the broker's
	// (IDEMCHAOS_NATS_URL, ...).
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	_   struct{}
}

// The delivery-path faults of [Messages.Fault].
const (
	MessageFaultKillBeforeAck      = "kill-before-ack"
	MessageFaultKillAfterAck       = "kill-after-ack"
	MessageFaultPublishTwiceSameID = "publish-twice-same-id"
	MessageFaultPublishTwiceNewID  = "publish-twice-new-id"
	MessageFaultPoisonMessage      = "poison-message"
	MessageFaultBrokerRestart      = "broker-restart"
)

// Messages is a consumer scenario's plan.
type Messages struct {
	// Count is how many messages are published.
	Count int `yaml:"count" json:"count"`
	// Fault is the delivery-path fault applied to message Target (0-based;
	// "" for none): kill-before-ack, kill-after-ack,
	// publish-twice-same-id, publish-twice-new-id, poison-message (its
	// body cannot be applied) or broker-restart (the broker restarted once
	// it saw the target's ack).
	Fault  string `yaml:"fault" json:"fault,omitempty"`
	Target int    `yaml:"target" json:"target,omitempty"`
	_      struct{}
}

// Target is the system under test: the bundled reference (optionally one of
// its mutants) or a user's service URL.
type Target struct {
	// Reference runs the bundled reference service in the local environment.
	Reference *ReferenceTarget `yaml:"reference" json:"reference,omitempty"`
	// URL is a user's service (the external environment).
	URL string `yaml:"url" json:"url,omitempty"`
	// AllowRemote declares that URL is not on this machine. It allows
	// nothing by itself: a run of the scenario then needs --allow-remote
	// (harness.OpenOptions.AllowRemote) and stops at this key without it.
	AllowRemote bool `yaml:"allow_remote" json:"allow_remote,omitempty"`
	// Image is a user's service as a container image NAME[:TAG] (the
	// docker environment); Port, Env, Database and DSNEnv configure it.
	Image string `yaml:"image" json:"image,omitempty"`
	// Port is the port the image's service listens on (default 8080).
	Port int `yaml:"port" json:"port,omitempty"`
	// Env is the container's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Database "postgres" starts a database for the image, reached through
	// a fault proxy, its DSN in the environment variable DSNEnv.
	Database string `yaml:"database" json:"database,omitempty"`
	// DSNEnv names the variable that carries the DSN (default DATABASE_URL).
	DSNEnv string `yaml:"dsn_env" json:"dsn_env,omitempty"`
	_      struct{}
}

// ReferenceTarget configures the reference service for a scenario.
type ReferenceTarget struct {
	// Mutant switches on one known pitfall ("" = the correct service).
	Mutant string `yaml:"mutant" json:"mutant,omitempty"`
	// Lease is how long 'processing' blocks duplicates (default 1s in scenarios).
	Lease time.Duration `yaml:"lease" json:"lease,omitempty"`
	// Retention and RetryWindow are the record retention and the clients'
	// retry window (defaults 24h and 1h).
	Retention   time.Duration `yaml:"retention" json:"retention,omitempty"`
	RetryWindow time.Duration `yaml:"retry_window" json:"retry_window,omitempty"`
	// Consumer starts the outbox consumer process.
	Consumer bool `yaml:"consumer" json:"consumer,omitempty"`
	// VisibilityTimeout is the consumer's redelivery delay (default 1s).
	VisibilityTimeout time.Duration `yaml:"visibility_timeout" json:"visibility_timeout,omitempty"`
	// Replica starts a streaming standby and passes it to the service.
	Replica bool `yaml:"replica" json:"replica,omitempty"`
	_       struct{}
}

// Endpoint is the request every intent sends.
type Endpoint struct {
	Method string `yaml:"method" json:"method"` // default POST
	Path   string `yaml:"path" json:"path"`     // default /v1/orders
	// KeyHeader is the idempotency key header (default Idempotency-Key).
	KeyHeader string            `yaml:"key_header" json:"key_header"`
	Headers   map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Body is a template: {{intent}}, {{tenant}}, {{key}}, {{n}}, {{sku}},
	// {{qty}}, {{amount}} and {{uuid}} are filled for every request from
	// its final intent, tenant and key (the path and header values take
	// the same placeholders).
	Body string `yaml:"body" json:"body"`
	// Tenant says where the service reads the tenant from (default: a
	// bearer token).
	Tenant TenantPlacement `yaml:"tenant" json:"tenant"`
	// Tokens maps tenant → bearer token (default, for tenant.in token:
	// t1..tN → tok-t1..tok-tN, N the largest tenants of the scenario and
	// its steps). With another tenant.in, tokens are sent only when given.
	Tokens map[string]string `yaml:"tokens" json:"tokens,omitempty"`
	_      struct{}
}

// Where a request carries its tenant ([TenantPlacement.In]).
const (
	TenantInToken  = "token"  // Authorization: Bearer <token of the tenant>
	TenantInHeader = "header" // a header named Name
	TenantInQuery  = "query"  // a query parameter named Name
	TenantInPath   = "path"   // the path template writes {{tenant}}
	TenantInBody   = "body"   // the body template writes {{tenant}}
)

// TenantPlacement is where a request carries its tenant, declared once:
// the harness then puts every request's final tenant there.
type TenantPlacement struct {
	// In is token (default), header, query, path or body.
	In string `yaml:"in" json:"in"`
	// Name is the header (default X-Tenant) or query parameter (default
	// tenant) for In header or query.
	Name string `yaml:"name" json:"name,omitempty"`
	_    struct{}
}

// Contract is the status-code profile checkers judge by (see
// [Scenario.Profile]). After loading, the codes are filled in for the
// built-in profiles too.
type Contract struct {
	// Profile is ietf (default), stripe or custom (the default when any
	// code is set; custom needs Reuse and InFlight, MissingKey 0 meaning
	// requests without a key execute).
	Profile    string `yaml:"profile" json:"profile"`
	MissingKey int    `yaml:"missing_key" json:"missing_key,omitempty"`
	Reuse      int    `yaml:"reuse" json:"reuse,omitempty"`
	InFlight   int    `yaml:"in_flight" json:"in_flight,omitempty"`
	// Fingerprint is how the service is expected to compare a retry's
	// payload with the first request's: strict (bytes) or canonical
	// (parsed JSON: key order and whitespace do not matter, types do).
	// When set, some duplicates are re-serialised to probe it; "" sends
	// none (see also [Traffic.Retyped]).
	Fingerprint string `yaml:"fingerprint" json:"fingerprint,omitempty"`
	// Repeat is how the service answers a repeat of a key: "" (the first
	// answer replayed) or "refuse": every repeat — an identical retry
	// after success, a duplicate in flight, a reuse — gets RepeatStatus,
	// never a replay. The refusal is then the expected answer to an
	// identical retry and the client does not retry it; reuse and
	// in_flight default to RepeatStatus, missing_key to 400.
	Repeat       string `yaml:"repeat" json:"repeat,omitempty"`
	RepeatStatus int    `yaml:"repeat_status" json:"repeat_status,omitempty"`
	// MaxKeyLength is the longest idempotency key the service keeps whole
	// (0: no limit). A service that truncates keys merges the intents whose
	// keys share the kept prefix, silently; Load refuses a scenario whose
	// keys ([Scenario.KeyLength]) would be longer.
	MaxKeyLength int `yaml:"max_key_length" json:"max_key_length,omitempty"`
	// MaxDeliveries is the most deliveries of one message a consumer
	// scenario allows (0: 10, checkers.DefaultMaxDeliveries): a message
	// delivered more often was retried without bound (bounded-redelivery).
	MaxDeliveries int `yaml:"max_deliveries" json:"max_deliveries,omitempty"`
	_             struct{}
}

// The payload fingerprints of [Contract.Fingerprint].
const (
	FingerprintStrict    = "strict"
	FingerprintCanonical = "canonical"
)

// Traffic shapes the generated plan.
type Traffic struct {
	Intents     int           `yaml:"intents" json:"intents"`         // default 20
	Tenants     int           `yaml:"tenants" json:"tenants"`         // default 2, or len(endpoint.tokens)
	Concurrency int           `yaml:"concurrency" json:"concurrency"` // default 8
	Spread      time.Duration `yaml:"spread" json:"spread"`           // intents start within this window (default 200ms)
	// Rates, each in [0,1], of intents that are:
	Duplicates float64 `yaml:"duplicates" json:"duplicates"` // submitted again later, same key and body
	Collisions float64 `yaml:"collisions" json:"collisions"` // a byte-identical body of an earlier intent (a legit second purchase)
	Reuse      float64 `yaml:"reuse" json:"reuse"`           // an earlier intent's key with a different body
	// Retyped is the rate of reuse intents whose payload differs from the
	// key's first only in a value's JSON type ("qty":1 → "qty":"1"): for
	// services that accept both types (a typed one refuses them, 400).
	Retyped    float64 `yaml:"retyped" json:"retyped,omitempty"`
	SharedKeys float64 `yaml:"shared_keys" json:"shared_keys"` // the same key as an intent of another tenant
	// Client is correct (default), key-per-attempt or retry-4xx.
	Client      string        `yaml:"client" json:"client"`
	Retry       Retry         `yaml:"retry" json:"retry"`
	Timeout     time.Duration `yaml:"timeout" json:"timeout"`           // per attempt (default 2s)
	Deadline    time.Duration `yaml:"deadline" json:"deadline"`         // whole step (default 30s)
	MaxRequests int           `yaml:"max_requests" json:"max_requests"` // whole step (default 2000)
	_           struct{}
}

// Retry is the client's retry policy (defaults: max_attempts 30, base
// 25ms, max 500ms, max_retry_after 2s, budget the decision bound + 2s).
type Retry struct {
	MaxAttempts   int           `yaml:"max_attempts" json:"max_attempts"`
	Base          time.Duration `yaml:"base" json:"base"`
	Max           time.Duration `yaml:"max" json:"max"`
	MaxRetryAfter time.Duration `yaml:"max_retry_after" json:"max_retry_after"`
	// Budget stops retrying an intent this long after its first attempt
	// (default: eventually-decided's bound + 2s, so that a client never
	// gives up before a decision is due).
	Budget time.Duration `yaml:"budget" json:"budget"`
	_      struct{}
}

// FaultSpec is one fault of a scenario: a registered kind, its parameters
// (decoded into the kind's own typed struct) and when it acts.
type FaultSpec struct {
	Kind string `yaml:"kind" json:"kind"`
	// Params is the kind's parameters as written; the loader decodes and
	// validates them once into a value of the kind (see faults.New), of
	// which [FaultSpec.Build] returns a fresh copy for each use.
	Params map[string]any `yaml:"params" json:"params,omitempty"`
	When   When           `yaml:"when" json:"when"`
	// Node keeps the params' YAML node for positioned errors.
	Node ast.Node `yaml:"-" json:"-"`
	// proto is the loader's decoded, validated fault (nil for a spec built
	// in Go, which Build decodes on each call).
	proto faults.Fault
	_     struct{}
}

// When says when a fault acts: timed faults at At for For; aimed faults on
// a fraction of intents, or on every n-th intent (not both; neither: the
// first intent), at a given attempt number.
type When struct {
	At       time.Duration `yaml:"at" json:"at,omitempty"`
	For      time.Duration `yaml:"for" json:"for,omitempty"`
	Fraction float64       `yaml:"fraction" json:"fraction,omitempty"`
	Nth      int           `yaml:"nth" json:"nth,omitempty"`
	Attempt  int           `yaml:"attempt" json:"attempt,omitempty"` // default 1
	// Attempts (client scenarios) is how many consecutive attempts, from
	// Attempt on, the fault hits (default 1); Every hits them all.
	Attempts int  `yaml:"attempts" json:"attempts,omitempty"`
	Every    bool `yaml:"every" json:"every,omitempty"`
	_        struct{}
}

// Effects says how to read what the system really produced.
type Effects struct {
	// Oracle is reference (default for reference targets), sql, http or none.
	Oracle string `yaml:"oracle" json:"oracle"`
	// DSN and Query for sql: the query returns tenant, key, effect id rows.
	DSN   string `yaml:"dsn" json:"dsn,omitempty"`
	Query string `yaml:"query" json:"query,omitempty"`
	// URL for http: a GET returning JSON; Items, Tenant, Key and ID are
	// JSONPath expressions (RFC 9535: "$.effects[*]", "$.tenant") picking
	// the list of effects and each one's fields. URL and the values of
	// Headers may name {{tenant}} and {{token}} (the tenant's bearer token
	// of endpoint.tokens): the listing is then read once per tenant, and
	// Tenant may be left out (the items are the read's tenant's).
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Next (http) is a JSONPath selecting the next page of a listing: its
	// URL (absolute or relative to the page), or, with Cursor, a cursor
	// sent back as the query parameter Cursor names. Nothing, null or ""
	// ends the listing.
	Next   string `yaml:"next" json:"next,omitempty"`
	Cursor string `yaml:"cursor" json:"cursor,omitempty"`
	Items  string `yaml:"items" json:"items,omitempty"`
	Tenant string `yaml:"tenant" json:"tenant,omitempty"`
	Key    string `yaml:"key" json:"key,omitempty"`
	ID     string `yaml:"id" json:"id,omitempty"`
	// State, WrittenAt and Resource (http) are optional JSONPath
	// expressions of an item: its resource's state, when that state was
	// written, and which resource it is (forward-only's). The sql oracle
	// reads them as the query's columns named state, written_at and
	// resource.
	State     string `yaml:"state" json:"state,omitempty"`
	WrittenAt string `yaml:"written_at" json:"written_at,omitempty"`
	Resource  string `yaml:"resource" json:"resource,omitempty"`
	// ResponseID (sql, http) is a JSONPath into an acknowledged (2xx)
	// response body selecting the id of the resource it created ("$.id"):
	// an effect with that id is attributed to the request's intent.
	ResponseID string `yaml:"response_id" json:"response_id,omitempty"`
	// Settle is how long to wait for asynchronous effects (the queue) to
	// drain before reading them, after every step (default 0: one client
	// timeout, bounded, after a step in which an attempt timed out, whose
	// work may still be running; reference targets count their handlers
	// instead). The effects are then read until two reads agree.
	Settle time.Duration `yaml:"settle" json:"settle,omitempty"`
	_      struct{}
}

// Invariant names a checker and its parameters. In YAML it is a plain name
// ("exactly-once") or a mapping {name, bound, headers}; a scenario that
// lists none gets all seven.
type Invariant struct {
	Name string `yaml:"name" json:"name"`
	// Bound is eventually-decided's decision bound.
	Bound time.Duration `yaml:"bound" json:"bound,omitempty"`
	// Headers are replay-identical's compared headers.
	Headers []string `yaml:"headers" json:"headers,omitempty"`
	// States are forward-only's declared order of the resources' states,
	// first to last: [created, paid, refunded].
	States []string `yaml:"states" json:"states,omitempty"`
	_      struct{}
}

// Hooks are commands for process faults on external targets. Each runs with
// sh -c; a non-zero exit fails the fault.
type Hooks struct {
	Kill            string `yaml:"kill" json:"kill,omitempty"`
	Restart         string `yaml:"restart" json:"restart,omitempty"`
	KillConsumer    string `yaml:"kill_consumer" json:"kill_consumer,omitempty"`
	RestartConsumer string `yaml:"restart_consumer" json:"restart_consumer,omitempty"`
	Purge           string `yaml:"purge" json:"purge,omitempty"`
	ReplicaDelay    string `yaml:"replica_delay" json:"replica_delay,omitempty"` // $DELAY_MS is set
	_               struct{}
}

// Named returns the hook of that scenario key (kill, restart, …; see
// faults.HookUser), or "" when it is not set or not a hook.
func (h Hooks) Named(key string) string {
	switch key {
	case "kill":
		return h.Kill
	case "restart":
		return h.Restart
	case "kill_consumer":
		return h.KillConsumer
	case "restart_consumer":
		return h.RestartConsumer
	case "purge":
		return h.Purge
	case "replica_delay":
		return h.ReplicaDelay
	}
	return ""
}

// Step is one phase of a scenario. A loaded step's Traffic is what it runs
// with; its Faults are nil when the file gave it none, and
// [Scenario.EffectiveSteps] fills them in from the scenario's.
type Step struct {
	// Name names the step in reports (default step-N).
	Name string `yaml:"name" json:"name"`
	// Traffic overrides fields of the scenario's traffic for this step: the
	// keys the file sets, zero values included. After loading it is never
	// nil: the scenario's traffic with the overrides applied, defaults filled.
	Traffic *Traffic `yaml:"traffic" json:"traffic,omitempty"`
	// Faults replace the scenario's faults for this step. A step without a
	// faults key inherits the scenario's; "faults: []" means none.
	Faults []FaultSpec `yaml:"faults" json:"faults,omitempty"`
	// Wait pauses before the step starts (e.g. past a retention window).
	Wait time.Duration `yaml:"wait" json:"wait,omitempty"`
	// Resend sends the previous step's intents again, same keys and bodies,
	// instead of new ones (retries that arrive late).
	Resend bool `yaml:"resend" json:"resend,omitempty"`
	// Callbacks makes this step send payment-provider callbacks for the
	// orders earlier steps created, instead of new intents.
	Callbacks *Callbacks `yaml:"callbacks" json:"callbacks,omitempty"`
	// Webhook makes this step play a payment provider against the
	// target's webhook endpoint, instead of sending new intents.
	Webhook *Webhook `yaml:"webhook" json:"webhook,omitempty"`
	// Expect is "clean" (default) or the name of the invariant expected to
	// fail, one of the scenario's invariants.
	Expect string `yaml:"expect" json:"expect"`
	// Intents (client scenarios) is this step's invocations (default
	// client.intents).
	Intents int `yaml:"intents" json:"intents,omitempty"`
	_       struct{}
}

// Callbacks are payment-provider callbacks (the reference's
// POST /v1/callbacks/payment): for every order an earlier step created, one
// callback with a provider transaction number, delivered Deliveries times.
// Each belongs to the intent that created its order.
type Callbacks struct {
	Path       string        `yaml:"path" json:"path"`             // default /v1/callbacks/payment
	Token      string        `yaml:"token" json:"token"`           // default tok-provider
	Status     string        `yaml:"status" json:"status"`         // paid (default) or fulfilled
	Deliveries int           `yaml:"deliveries" json:"deliveries"` // default 3
	Spread     time.Duration `yaml:"spread" json:"spread"`         // default 100ms
	IDField    string        `yaml:"id_field" json:"id_field"`     // default id
	_          struct{}
}

// Webhook is a payment provider playing its events against the target's
// webhook endpoint, the way providers deliver (seed 002 §八): each event
// signed (an HMAC-SHA256 over timestamp and body in SignatureHeader, the
// secret read from the environment variable SecretEnv, which the
// endpoint's process reads too) and delivered until a 2xx with the
// provider's backoff, bounded by Attempts and Within. The seed picks which
// events arrive twice at once (Duplicates), again after their 2xx (Late),
// which payments' events arrive in reverse order (OutOfOrder: paid before
// created), whose first delivery the endpoint executes and is answered 500
// (After500) or never answered (Timeouts), and Forged events signed with a
// wrong secret, which must be refused with no effect. Against the
// reference the events are for the orders the steps before created.
type Webhook struct {
	// Path is the endpoint the events are POSTed to (default the
	// reference's /v1/callbacks/payment).
	Path string `yaml:"path" json:"path,omitempty"`
	// SecretEnv names the environment variable holding the signing secret
	// (default WEBHOOK_SECRET); against the reference, unset, its default
	// secret.
	SecretEnv string `yaml:"secret_env" json:"secret_env,omitempty"`
	// Secret is the signing secret itself: read from SecretEnv when the
	// scenario is loaded (a Go test may set it instead). Never written
	// out.
	Secret string `yaml:"-" json:"-"`
	// SignatureHeader carries "t=<unix>,v1=<hex HMAC-SHA256 of
	// "<t>.<body>">" (default Webhook-Signature).
	SignatureHeader string `yaml:"signature_header" json:"signature_header,omitempty"`
	// Body is an event's JSON, with {{event}}, {{type}} (payment.<state>),
	// {{state}}, {{payment}}, {{amount}} and {{created}} (Unix seconds)
	// filled in; the default is Stripe-like (the reference's own shape
	// against the reference).
	Body string `yaml:"body" json:"body,omitempty"`
	// Payments is how many payments the provider makes events for
	// (default 4; against the reference, the orders so far).
	Payments int `yaml:"payments" json:"payments,omitempty"`
	// Events are each payment's events in the order they happen, which is
	// forward-only's order of states (default [created, paid, refunded];
	// against the reference [paid, fulfilled], after its pending).
	Events []string `yaml:"events" json:"events,omitempty"`
	// The fractions of events (Duplicates, Late, After500, Timeouts) and
	// of payments (OutOfOrder) the seed picks for each treatment; Forged
	// is a count. A nil rate takes its default (0.3, 0.3, 0.5, 0.25,
	// 0.25; forged 1); 0 turns the treatment off.
	Duplicates *float64 `yaml:"duplicates" json:"duplicates,omitempty"`
	Late       *float64 `yaml:"late" json:"late,omitempty"`
	OutOfOrder *float64 `yaml:"out_of_order" json:"out_of_order,omitempty"`
	After500   *float64 `yaml:"after_500" json:"after_500,omitempty"`
	Timeouts   *float64 `yaml:"timeouts" json:"timeouts,omitempty"`
	Forged     *int     `yaml:"forged" json:"forged,omitempty"`
	// Attempts bounds an event's deliveries (default 8) and Within the
	// time its retries may take (default 10s); Backoff is the first
	// retry's wait ceiling, doubling up to MaxBackoff (defaults 50ms, 1s,
	// full jitter); Spread is when the payments' first events start
	// (default 300ms) and LateBy how long after an event's first
	// delivery its late copy comes (default 300ms).
	Attempts   int           `yaml:"attempts" json:"attempts,omitempty"`
	Within     time.Duration `yaml:"within" json:"within,omitempty"`
	Backoff    time.Duration `yaml:"backoff" json:"backoff,omitempty"`
	MaxBackoff time.Duration `yaml:"max_backoff" json:"max_backoff,omitempty"`
	Spread     time.Duration `yaml:"spread" json:"spread,omitempty"`
	LateBy     time.Duration `yaml:"late_by" json:"late_by,omitempty"`
	_          struct{}
}

// DefaultWebhookSecretEnv is the variable a webhook's signing secret is
// read from when its secret_env names none.
const DefaultWebhookSecretEnv = "WEBHOOK_SECRET"

// Client is the caller under test of a client scenario: a command run once
// per intent, each invocation with its own address on the fault proxy, so
// that every attempt it makes is attributed to its intent by ground truth.
type Client struct {
	// Command is the argv of one invocation.
	Command []string `yaml:"command" json:"command"`
	// Intents is the invocations per step (default 20).
	Intents int `yaml:"intents" json:"intents"`
	// Concurrency is how many run at once (default 8).
	Concurrency int `yaml:"concurrency" json:"concurrency"`
	// Timeout kills an invocation's process group (default 30s).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Env is added to every invocation's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Contract is what the client promises (defaults filled in).
	Contract ClientContract `yaml:"contract" json:"contract"`
	_        struct{}
}

// ClientContract is where clients legitimately differ: the client
// invariants judge by it. Defaults are the seeds' (jitter required).
type ClientContract struct {
	// Budget is attempts per intent, the first included (default 5).
	Budget int `yaml:"budget" json:"budget"`
	// GlobalBudget is attempts per run (0: intents × budget).
	GlobalBudget int `yaml:"global_budget" json:"global_budget"`
	// RetryStatuses may be retried (default 408, 425, 429, 500, 502, 503,
	// 504); PermanentStatuses never are as they are (default 400, 401,
	// 403, 404, 422).
	RetryStatuses     []int `yaml:"retry_statuses" json:"retry_statuses"`
	PermanentStatuses []int `yaml:"permanent_statuses" json:"permanent_statuses"`
	// MinBackoff is the shortest wait before a retry (default 0).
	MinBackoff time.Duration `yaml:"min_backoff" json:"min_backoff,omitempty"`
	// Jitter is required (default) or optional.
	Jitter string `yaml:"jitter" json:"jitter"`
	// Unknown is allowed (default) or forbidden: whether a belief
	// "outcome unknown" (exit 75) is a violation.
	Unknown string `yaml:"unknown" json:"unknown"`
	_       struct{}
}

// IsClient says the scenario's traffic comes from the user's client.
func (s *Scenario) IsClient() bool { return s.Client != nil }

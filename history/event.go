package history

import (
	"encoding/json"
	"strings"
	"time"
)

// Version is the history format version this package reads and writes.
const Version = 1

// Type names the kind of an [Event]: the "type" field of a line.
type Type string

// The event types of format version 1.
const (
	TypeMeta   Type = "meta"
	TypeInvoke Type = "invoke"
	TypeOK     Type = "ok"
	TypeInfo   Type = "info"
	TypeFail   Type = "fail"
	TypeFault  Type = "fault"
	TypeEffect Type = "effect"
	// TypeInterrupted, the last line of a run that was cut short (Ctrl-C,
	// a deadline), says the history is partial: its error field says why.
	TypeInterrupted Type = "interrupted"
	// TypeStep says a step of the run begins: every event after it, up to
	// the next step event, belongs to it, and it is judged on the history
	// up to its end by its own expectation. A history without one is one
	// step that expects every invariant to hold.
	TypeStep Type = "step"
	// TypeBudget says the driver's request budget (max_requests) ran out
	// in the current step before every intent was sent and retried.
	TypeBudget Type = "budget"
	// TypeEnvironment says the harness could not do its job (its database
	// died, the disk filled, the oracle could not be read, the target
	// answered nothing): its error field names the cause. No verdict drawn
	// from such a history is the service's.
	TypeEnvironment Type = "environment"
	// TypeOracle is one read of the effect oracle: where it read, how many
	// effects came back, and what came back when none did.
	TypeOracle Type = "oracle"
	// TypeSettled says the service had quiesced by its ns: the harness
	// waited after a step's last attempt ended (effects.settle, and until
	// two reads of the oracle agreed) before it read the effects. An
	// attempt that ended info before it may have run on the server until
	// then, so the checkers hold it open until the settle's end.
	TypeSettled Type = "settled"
	// TypeAck is a consumer's acknowledgement of a message as its broker
	// saw it (consumer scenarios): the message's intent and key, the
	// broker's count of its deliveries (attempt) and whether it was an
	// ack, a terminate (kind "term") or a negative acknowledgement (kind
	// "nak": deliver it again). A message the broker saw acknowledged or
	// terminated will never be delivered again, so it must have had its
	// effect by then; a nak settles nothing.
	TypeAck Type = "ack"
	// TypeDelivery is the broker's count of one message's deliveries as
	// it stood at the run's end (consumer scenarios; field deliveries),
	// with kind "exhausted" when the broker reached its max-deliver count
	// and gave up delivering it, or "dead-lettered" when it moved it to a
	// dead-letter queue. bounded-redelivery reads them.
	TypeDelivery Type = "delivery"
	// TypeState is a later read of an effect's resource in another state
	// than the one its effect event (or the previous state event)
	// recorded: the same effect, not a new one, so effect counts are
	// untouched; forward-only reads it with the effects' states.
	TypeState Type = "state"
	// TypeInvocation says the client command of a client run was started
	// for an intent, with the payload it was given.
	TypeInvocation Type = "invocation"
	// TypeBelief says the client command of an intent ended, and what its
	// exit status says it believes: success, unknown or failure.
	TypeBelief Type = "belief"
)

// ModeClient is the meta event's "mode" of a client run: the traffic came
// from the user's client through idemchaos's per-intent proxy listeners,
// and the client, not the upstream, is judged.
const ModeClient = "client"

// The beliefs a client's exit status states (a belief event).
const (
	BeliefSuccess = "success"
	BeliefUnknown = "unknown"
	BeliefFailure = "failure"
)

// Event is one line of a history. Which fields are meaningful depends on
// [Event.Type]; docs/history-format.md documents the format field by field.
type Event struct {
	Type Type

	// Meta fields (type "meta", the first line).
	V        int    // format version
	Scenario string // scenario name
	Seed     int64  // the run's seed
	Started  string // RFC 3339 wall-clock start of the run
	// EffectsRecorded says the producer read the system's effects into this
	// history, so "no effect events" means "no effects", not "not looked".
	EffectsRecorded bool
	// EffectsUnread says the producer did NOT read the system's effects
	// ("effects_recorded": false written explicitly: no oracle, or a run
	// interrupted before the read). Checks that count effects answer
	// unknown rather than report an acknowledged intent without one.
	EffectsUnread bool
	// Contract is the idempotency contract the run was judged by, so that
	// a later check judges the same way; nil in histories that predate it.
	Contract *Contract
	// Invariants names the checks the run judged by, in order, so that a
	// later check judges the same ones; nil: the mode's default set.
	Invariants []string
	// Mode is "client" for a client run ([ModeClient]); "" for a run that
	// judges a server.
	Mode string
	// ClientContract is what a client run's client declared it keeps (its
	// budget, which statuses it retries, …); nil when not said.
	ClientContract *ClientContract

	// Name and Expect (step) are the step's name and expectation: "clean"
	// (every invariant holds; the default) or the invariant it expects
	// violated.
	Name   string
	Expect string
	// MaxRequests (budget) is the request budget that ran out.
	MaxRequests int64
	// Source, Read and Got (oracle) say where the oracle read ("GET <url>",
	// "query <sql>"), how many effects it returned, and, when it returned
	// none, what came back (clipped).
	Source string
	Read   int
	Got    string

	// Op is the attempt id, unique in the run (invoke, ok, info, fail; on a
	// fault, the attempt it hit, 0 when it hit none).
	Op      int64
	Intent  string // ground-truth intent id (may be absent in foreign histories)
	Tenant  string // idempotency scope: tenant
	Key     string // idempotency key ("" when the attempt carried none)
	Attempt int    // 1-based attempt number within the intent
	Client  int    // the simulated client (lane) that sent it
	NS      int64  // monotonic nanoseconds since run start
	// Deliveries (delivery) is the broker's count of the message's
	// deliveries at the run's end.
	Deliveries int

	// Listener (invoke) is the address of the per-intent proxy listener the
	// attempt arrived on, in a client run: the ground truth of its intent.
	Listener string
	// By (ok, info, fail) is "proxy" when the answer, or its absence, came
	// from idemchaos's fault proxy rather than the upstream; "" is the
	// upstream's own answer.
	By string
	// Forwarded (ok, info, fail with By) says whether the request reached
	// the upstream before the proxy answered in its stead: true means the
	// upstream executed it and its answer was replaced or dropped.
	Forwarded bool
	// RetryAfterMS (ok) is the delay the response's Retry-After asked for,
	// in milliseconds, parsed by the writer; 0 when it asked none.
	RetryAfterMS int64

	// Belief (belief) is what the client's exit status says it believes
	// ([BeliefSuccess], [BeliefUnknown], [BeliefFailure]); Exit is the
	// status itself and Resource the last non-empty line it printed.
	Belief   string
	Exit     int
	Resource string
	// Body (invocation) is the payload the client command was given.
	Body []byte

	Req   *Request  // invoke: what was sent
	Resp  *Response // ok: what came back
	Error string    // info, fail: why there was no response; interrupted: why the run stopped; environment: the cause; belief: why the command ended (killed at timeout)

	Fault  string          // fault: the fault kind, e.g. "response-drop"
	Action string          // fault: "fire" (default) or "heal"; invocation: "start"
	Detail json.RawMessage // fault: kind-specific parameters, any JSON

	Effect string // effect: what was produced, "<kind> <id>", e.g. "order 9912"
	Kind   string // effect: explicit kind; defaults to the first word of Effect; ack: "", "term" or "nak"; delivery: "", "exhausted" or "dead-lettered"

	// State (effect, invoke, ack) is a state of a resource with ordered
	// states (a payment's "paid"): on an effect, the state the system holds
	// it in; on an invoke or an ack, the state the request or message asks
	// it to move to (a provider's event, an ordered message). Resource
	// (effect, invoke, ack; on a belief the line the client printed) names
	// that resource, "payment pay_1"; an effect's defaults to its Effect.
	// WrittenAt (effect) is when the system wrote that state, by its own
	// clock. forward-only reads them: a state must never move back.
	State     string
	WrittenAt time.Time
}

// Contract is the meta event's "contract" object: the status codes, the
// payload fingerprint and the replay rules a service was judged by. The
// checkers package gives it meaning (checkers.Contract); this package only
// carries it. Zero fields mean "not said": the reader's defaults apply.
type Contract struct {
	Profile    string // ietf, stripe or custom
	MissingKey int    // status for a request without a key; 0: executed without idempotency
	Reuse      int    // status for a key reused with another payload
	InFlight   int    // status for a duplicate while the first is running
	// Fingerprint is how "the same payload" is judged: strict (bytes) or
	// canonical (parsed JSON: key order and whitespace do not matter).
	Fingerprint string
	// ReplayHeaders, when set, are the only response headers compared on a
	// replay; otherwise every header the first response carried is, except
	// ReplayIgnore.
	ReplayHeaders []string
	ReplayIgnore  []string
	// DecisionBound is eventually-decided's bound; RetentionGap the gap
	// past which a duplicate is blamed on record retention.
	DecisionBoundMS int64
	RetentionGapMS  int64
	// Repeat is how the service answers a repeat of a key: "" (replay the
	// first answer) or "refuse" (every repeat — an identical retry, a
	// duplicate in flight, a reuse — gets RepeatStatus, never a replay).
	Repeat       string
	RepeatStatus int
	// MaxKeyLength is the longest key the service keeps whole (0: no
	// limit): the runs' keys were checked against it.
	MaxKeyLength int64
	// States is the declared order of the resources' states, first to
	// last ("created", "paid", "refunded"): forward-only's.
	States []string
	// MaxDeliveries is the most deliveries of one message a consumer
	// scenario allows (bounded-redelivery's bound; 0: its default).
	MaxDeliveries int
}

// ClientContract is the meta event's "client_contract" object: what a
// client under test declares it keeps, where clients legitimately differ.
// The checkers package gives it meaning; zero fields mean "not said" and
// the checkers' defaults apply.
type ClientContract struct {
	// Budget is the attempts allowed per intent (the first and its
	// retries); GlobalBudget those of the whole run (0: intents × Budget).
	Budget       int
	GlobalBudget int
	// RetryStatuses are the statuses the client may retry;
	// PermanentStatuses those it must never re-send as they are. Nil: the
	// defaults.
	RetryStatuses     []int
	PermanentStatuses []int
	// MinBackoffMS is the shortest wait the client promises between
	// attempts.
	MinBackoffMS int64
	// Jitter is "required" or "optional": whether clients hit by one
	// outage must spread their retries.
	Jitter string
	// Unknown is "allowed" or "forbidden": whether the client may answer
	// "outcome unknown" (exit 75).
	Unknown string
}

// Request is the request of an invoke event.
type Request struct {
	Method  string
	Path    string
	Headers Headers
	Body    []byte
}

// Response is the response of an ok event.
type Response struct {
	Status  int
	Headers Headers
	Body    []byte
}

// Header is one header field. Repeated fields are joined with ", " (RFC 9110).
type Header struct {
	Name  string
	Value string
}

// Headers keeps header fields in the order they were recorded.
type Headers []Header

// Get returns the value of the named header, matching names
// case-insensitively as HTTP does, and whether it was present.
func (h Headers) Get(name string) (string, bool) {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value, true
		}
	}
	return "", false
}

// EffectKind returns the kind of an effect event: its explicit Kind, else the
// first word of Effect ("order 9912" is an "order").
func (e *Event) EffectKind() string {
	if e.Kind != "" {
		return e.Kind
	}
	if i := strings.IndexByte(e.Effect, ' '); i > 0 {
		return e.Effect[:i]
	}
	return e.Effect
}

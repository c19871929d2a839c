package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Outcome is how an attempt ended.
type Outcome uint8

// The three outcomes of DESIGN §1.
const (
	// Info: indeterminate. A timeout, a reset after sending, or no completion
	// event at all: the server may or may not have executed the request.
	Info Outcome = iota
	// OK: a response arrived, whatever its status.
	OK
	// Fail: provably not delivered, so provably not executed.
	Fail
)

// String returns "ok", "fail" or "info".
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	}
	return "info"
}

// PreviewBytes is how much of each response body a loaded [History] keeps for
// explanations; identity is judged on a hash of the whole body.
const PreviewBytes = 96

// Attempt is one request as the checkers see it: its invoke event joined with
// its completion, with bodies reduced to hashes.
type Attempt struct {
	// The fields that hold pointers come first: the collector scans an
	// attempt only up to its last pointer, and a loaded history holds
	// hundreds of thousands of them.

	Intent string // ground truth, or "key:<tenant>/<key>" when the history has none
	Tenant string
	Key    string
	Method string
	Path   string
	Error  string
	// RespPreview is the start of the response body, for explanations.
	RespPreview string
	// RespHeaders keeps only the headers named in [LoadOptions.KeepHeaders].
	RespHeaders Headers
	// Listener is the per-intent proxy listener the attempt arrived on (a
	// client run's invoke "listener"), "" when not recorded.
	Listener string

	Op     int64
	Number int // attempt number within the intent
	Client int

	Invoke   int64 // ns of the invoke event
	Complete int64 // ns of the completion event; -1 when none arrived

	ReqHash uint64 // hash of the request body: the payload fingerprint
	// ReqCanon is a hash of the request body as canonical JSON (object keys
	// sorted, insignificant whitespace dropped, strings unescaped; number,
	// string, boolean and null stay distinct), or ReqHash when the body is
	// not JSON: the fingerprint of a contract that says "canonical".
	ReqCanon uint64
	Status   int
	// RespHash is a hash of the raw response body; RespLen its length.
	RespHash uint64
	RespLen  int
	// RetryAfterMS is the delay the answer asked for (retry_after_ms), 0
	// for none.
	RetryAfterMS int64
	Outcome      Outcome
	HasResp      bool
	// Proxied says the answer, or its absence, came from idemchaos's fault
	// proxy ("by":"proxy"), not from the upstream; Forwarded, that the
	// request had reached the upstream before the proxy answered.
	Proxied   bool
	Forwarded bool
}

// Done reports whether the attempt's completion was recorded.
func (a *Attempt) Done() bool { return a.Complete >= 0 }

// End returns the completion time, or end when the attempt never completed:
// an open attempt may still be running at the end of the history.
func (a *Attempt) End(end int64) int64 {
	if a.Complete >= 0 {
		return a.Complete
	}
	return end
}

// Fault is one fault event.
type Fault struct {
	Kind   string
	Action string // "fire" or "heal"
	Op     int64  // the attempt it hit, 0 for none
	NS     int64
	Detail json.RawMessage
}

// Effect is one effect the system really produced.
type Effect struct {
	Tenant string
	Key    string
	Intent string // when the oracle could tell it
	Kind   string // "order", "notification", ...
	ID     string // the full effect text, e.g. "order 9912"
	NS     int64
	// State is the state the system holds the effect's resource in
	// ("paid"), "" when the oracle reads none; Resource names that
	// resource ("payment pay_1"; "" means the effect itself, ID); WrittenAt
	// is when the state was written, by the system's clock (zero: not
	// read).
	State, Resource string
	WrittenAt       time.Time
}

// StateRead is a later read of an effect's resource in another state (a
// state event): the effect it belongs to is recorded once, its states as
// they were read.
type StateRead struct {
	Tenant, Resource, State string
	WrittenAt               time.Time
	NS                      int64
}

// Transition is a request or message that asks a resource to move to a
// state (an invoke or ack event with a state): a provider's "payment paid"
// event, an ordered message. Once acknowledged, the resource must be in
// that state or one after it.
type Transition struct {
	// Op is the attempt that carried it (an invoke), 0 for an ack.
	Op int64
	// Acked says an ack event carried it: the consumer acknowledged it.
	// An attempt's transition is acknowledged by the attempt's 2xx.
	Acked                           bool
	Intent, Tenant, Resource, State string
	NS                              int64
}

// Ack is one acknowledgement of a message its broker saw (an ack event).
type Ack struct {
	Tenant string
	Key    string
	Intent string
	// Delivered is the broker's count of the message's deliveries when it
	// was acknowledged (1: the first delivery).
	Delivered int
	// Term says the consumer terminated the message (no more deliveries)
	// rather than acknowledging it: as final for a lost message.
	Term bool
	// Nak says the consumer asked the broker to deliver the message again
	// (a negative acknowledgement): it settles nothing.
	Nak bool
	NS  int64
}

// Settles says the ack ends the message's deliveries: an ack or a
// terminate, not a nak.
func (a Ack) Settles() bool { return !a.Nak }

// The kinds of a delivery event.
const (
	// DeliveryExhausted: the broker reached its max-deliver count and
	// gave up delivering the message, which stays where it is, unsettled.
	DeliveryExhausted = "exhausted"
	// DeliveryDeadLettered: the broker moved the message to a dead-letter
	// queue (RabbitMQ's delivery-limit with a dead-letter exchange).
	DeliveryDeadLettered = "dead-lettered"
)

// Delivery is the broker's count of one message's deliveries at the run's
// end (a delivery event).
type Delivery struct {
	Tenant, Key, Intent string
	// Count is how many times the broker delivered the message.
	Count int
	// Kind is "", [DeliveryExhausted] or [DeliveryDeadLettered].
	Kind string
	NS   int64
}

// Invocation is the start of a client command for one intent (an
// invocation event of a client run).
type Invocation struct {
	Intent string
	Tenant string
	NS     int64
	// BodyHash and BodyCanon fingerprint the payload the command was given,
	// as [Attempt.ReqHash] and [Attempt.ReqCanon] do a request's.
	BodyHash, BodyCanon uint64
}

// Belief is what a client command's exit said about its intent (a belief
// event of a client run).
type Belief struct {
	Intent string
	// Belief is [BeliefSuccess], [BeliefUnknown] or [BeliefFailure].
	Belief   string
	Exit     int
	Resource string
	// Error says why the command ended otherwise ("killed at timeout 30s").
	Error string
	NS    int64
}

// History is a loaded history: every attempt with its outcome, every fault
// and every effect, in the order they were recorded.
type History struct {
	Meta     Event
	Attempts []Attempt
	Faults   []Fault
	Effects  []Effect
	// Acks are the consumers' acknowledgements the broker saw (ack
	// events; consumer scenarios only).
	Acks []Ack
	// Deliveries are the broker's delivery counts per message at the
	// run's end (delivery events; consumer scenarios only).
	Deliveries []Delivery
	// Transitions are the invokes and acks that asked a resource to move
	// to a state, in the order they were recorded.
	Transitions []Transition
	// States are the later reads of effects' resources in other states
	// (state events), in the order they were read.
	States []StateRead
	// Truncated says the input ended mid-line: events may be missing.
	Truncated bool
	// Interrupted says why the run was cut short ("" when it was not): the
	// history is partial, so no verdict drawn from it is definite.
	Interrupted string
	// EffectsKnown says the history records effects (an effect event, or the
	// meta flag effects_recorded), so that no effect means no effect.
	EffectsKnown bool
	// IntentsKnown says the producer recorded ground-truth intents.
	IntentsKnown bool
	// Steps are the steps the history records (step events), in order,
	// each with the position it began at ([History.Through]); nil when it
	// records none: the whole history is then one step expecting every
	// invariant to hold.
	Steps []Step
	// Environment says why the harness could not do its job (its
	// environment events' causes, joined by "; "), "" when nothing failed:
	// no verdict drawn from such a history is the service's.
	Environment string
	// Oracle lists the reads of the effect oracle the history records.
	Oracle []OracleRead
	// Settled lists the ns of the history's settled events, in order: when
	// the service had quiesced before its effects were read.
	Settled []int64
	// Events is the number of events read; End the largest ns seen.
	Events int
	End    int64
	// Skipped counts events of types this reader does not know.
	Skipped int
	// Invocations and Beliefs are a client run's starts and ends of the
	// client command, one each per intent, in the order recorded.
	Invocations []Invocation
	Beliefs     []Belief
}

// Client says the history is a client run's (its meta's mode is client).
func (h *History) Client() bool { return h.Meta.Mode == ModeClient }

// LoadOptions tunes [Load].
type LoadOptions struct {
	// KeepHeaders names the response headers to keep (case-insensitive).
	// Nil means [DefaultKeepHeaders].
	KeepHeaders []string
	// KeepHeader, when set, also keeps every response header it accepts
	// (it is given the name as recorded). A contract that compares every
	// header a first response carried keeps all but an ignore list. Its
	// answer must depend on the name alone: it is asked once per name.
	KeepHeader func(name string) bool
}

// DefaultKeepHeaders are the response headers a loaded history keeps when
// [LoadOptions.KeepHeaders] is nil.
var DefaultKeepHeaders = []string{"Content-Type", "Idempotent-Replayed", "Retry-After"}

var hashSeed = maphash.MakeSeed()

// Hash returns the hash a loaded [History] uses for bodies.
func Hash(b []byte) uint64 { return maphash.Bytes(hashSeed, b) }

// Load reads a whole history in one streaming pass, keeping per attempt only
// what the checkers need. A history cut off mid-line loads with Truncated set;
// any other malformed line is an error carrying its line number.
//
// The fast paths (files fast_*.go) sit behind one function, [loadFast]:
// a line they do not fully accept goes through the reference decoding,
// [Reader] and [History.add] ([loader.slow]), which also gives every error
// message; the differential tests hold the two to the same History. With
// more than one processor, lines are scanned on other goroutines while
// this one applies them in order ([loadParallel]); the result, errors
// included, is the same as the serial loop's.
func Load(r io.Reader, opts LoadOptions) (*History, error) {
	return loadFast(r, opts, runtime.GOMAXPROCS(0), loadBlock)
}

// slow applies a line through the JSON parser, [Reader.decode] and
// [History.add]. stop is true after a truncated last line.
func (l *loader) slow(rd *Reader, raw []byte, complete bool, e *Event) (stop bool, err error) {
	h := l.h
	v, err := rd.parse(raw, complete)
	if errors.Is(err, ErrTruncated) {
		h.Truncated = true
		return true, nil
	}
	if err != nil {
		return false, err
	}
	skip, err := rd.decode(v, e)
	if err != nil || skip {
		return false, err
	}
	l.count(e.NS)
	if err := h.add(e, l); err != nil {
		return false, &LineError{Line: rd.Line(), Msg: err.Error()}
	}
	return false, nil
}

// inputSize returns how many bytes r has left to give when it can tell
// (a regular file, a bytes.Reader), else 0.
func inputSize(r io.Reader) int64 {
	switch r := r.(type) {
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return 0
		}
		at, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0
		}
		return max(fi.Size()-at, 0)
	case interface{ Len() int }:
		return int64(r.Len())
	}
	return 0
}

// done ends a load: both load paths finish the same way.
func (h *History) done(l *loader, rd *Reader) (*History, error) {
	l.finish()
	h.Skipped = rd.Skipped
	if h.Events == 0 {
		return nil, &LineError{Line: rd.Line() + 1, Msg: `empty history: expected a meta event {"type":"meta","v":1,...}`}
	}
	return h, nil
}

// add applies one decoded event. It is the reference for what every event
// type means; [loader.fast] takes a shorter path to the same result for the
// common lines.
func (h *History) add(e *Event, l *loader) error {
	in := l.in
	switch e.Type {
	case TypeMeta:
		if h.Events > 1 {
			return fmt.Errorf("a second meta event: a history holds one run")
		}
		h.Meta = *e
		h.EffectsKnown = h.EffectsKnown || e.EffectsRecorded
	case TypeInvoke:
		a := Attempt{
			Op: e.Op, Tenant: in.get(e.Tenant), Key: e.Key, Number: e.Attempt, Client: e.Client,
			Invoke: e.NS, Complete: -1, Outcome: Info,
		}
		if e.Intent != "" {
			a.Intent = e.Intent
			h.IntentsKnown = true
		} else {
			a.Intent = "key:" + e.Tenant + "/" + e.Key
		}
		if e.Listener != "" {
			a.Listener = in.get(e.Listener)
		}
		if e.Req != nil {
			a.Method, a.Path = in.get(e.Req.Method), in.get(e.Req.Path)
			a.ReqHash = Hash(e.Req.Body)
			a.ReqCanon = l.canon.hash(e.Req.Body, a.ReqHash)
		}
		if e.State != "" {
			h.Transitions = append(h.Transitions, Transition{Op: e.Op, Intent: e.Intent, Tenant: a.Tenant, Resource: e.Resource, State: e.State, NS: e.NS})
		}
		return l.invoked(&a)
	case TypeOK, TypeInfo, TypeFail:
		a, err := l.completed(e.Type, e.Op)
		if err != nil {
			return err
		}
		a.Complete = e.NS
		a.Error = e.Error
		a.Proxied, a.Forwarded, a.RetryAfterMS = e.By == "proxy", e.Forwarded, e.RetryAfterMS
		switch e.Type {
		case TypeOK:
			a.Outcome = OK
			a.HasResp = true
			a.Status = e.Resp.Status
			a.RespHash = Hash(e.Resp.Body)
			a.RespLen = len(e.Resp.Body)
			a.RespPreview = preview(e.Resp.Body)
			for _, f := range e.Resp.Headers {
				kept := false
				for _, k := range l.keep {
					if strings.EqualFold(f.Name, k) {
						a.RespHeaders = append(a.RespHeaders, Header{Name: in.get(k), Value: in.get(f.Value)})
						kept = true
					}
				}
				if !kept && l.keepFn != nil && l.keepFn(f.Name) {
					a.RespHeaders = append(a.RespHeaders, Header{Name: in.get(f.Name), Value: in.get(f.Value)})
				}
			}
		case TypeFail:
			a.Outcome = Fail
		}
	case TypeFault:
		action := e.Action
		if action == "" {
			action = "fire"
		}
		h.Faults = append(h.Faults, Fault{Kind: in.get(e.Fault), Action: in.get(action), Op: e.Op, NS: e.NS, Detail: e.Detail})
	case TypeInterrupted:
		h.Interrupted = e.Error
		if h.Interrupted == "" {
			h.Interrupted = "interrupted"
		}
	case TypeStep, TypeBudget, TypeEnvironment, TypeOracle, TypeSettled:
		h.addRun(e, l.attempts.n, l.effects.n)
	case TypeInvocation:
		bh := Hash(e.Body)
		h.Invocations = append(h.Invocations, Invocation{Intent: e.Intent, Tenant: in.get(e.Tenant), NS: e.NS, BodyHash: bh, BodyCanon: l.canon.hash(e.Body, bh)})
	case TypeBelief:
		h.Beliefs = append(h.Beliefs, Belief{Intent: e.Intent, Belief: in.get(e.Belief), Exit: e.Exit, Resource: e.Resource, Error: e.Error, NS: e.NS})
	case TypeState:
		h.States = append(h.States, StateRead{Tenant: in.get(e.Tenant), Resource: e.Resource, State: in.get(e.State), WrittenAt: e.WrittenAt, NS: e.NS})
	case TypeAck:
		nak := e.Kind == "nak"
		h.Acks = append(h.Acks, Ack{Tenant: in.get(e.Tenant), Key: e.Key, Intent: e.Intent, Delivered: e.Attempt, Term: e.Kind == "term", Nak: nak, NS: e.NS})
		// A nak asks for the message again: it acknowledges no state.
		if e.State != "" && !nak {
			h.Transitions = append(h.Transitions, Transition{Acked: true, Intent: e.Intent, Tenant: in.get(e.Tenant), Resource: e.Resource, State: e.State, NS: e.NS})
		}
	case TypeDelivery:
		h.Deliveries = append(h.Deliveries, Delivery{Tenant: in.get(e.Tenant), Key: e.Key, Intent: e.Intent, Count: e.Deliveries, Kind: in.get(e.Kind), NS: e.NS})
	case TypeEffect:
		h.EffectsKnown = true
		l.effects.add(Effect{
			Tenant: in.get(e.Tenant), Key: e.Key, Intent: e.Intent, Kind: in.get(e.EffectKind()), ID: e.Effect, NS: e.NS,
			State: in.get(e.State), Resource: e.Resource, WrittenAt: e.WrittenAt,
		})
	}
	return nil
}

func preview(b []byte) string {
	if len(b) <= PreviewBytes {
		return string(b)
	}
	var s strings.Builder
	s.Grow(PreviewBytes + len("…"))
	s.Write(b[:PreviewBytes])
	s.WriteString("…")
	return s.String()
}

// interner shares the storage of values that repeat on every line (tenants,
// methods, paths, header values), which keeps a million-event history small.
// Only low-cardinality fields go through it.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) > 1<<16 {
		return s
	}
	in[s] = s
	return s
}

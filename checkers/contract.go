package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// The payload fingerprint modes of a [Contract]: how a service decides that
// a retry carries "the same payload" as the request that claimed its key.
const (
	// FingerprintStrict: the same bytes. A body that differs in any byte
	// (key order, whitespace) is another payload and must be rejected.
	FingerprintStrict = "strict"
	// FingerprintCanonical: the same parsed JSON. Key order, whitespace and
	// escapes do not matter; a number, a string and a boolean do ("qty":1
	// and "qty":"1" are two payloads).
	FingerprintCanonical = "canonical"
	// FingerprintEither (the default): an identical body must be replayed
	// and a canonically different one rejected; a body that differs only
	// in JSON formatting may get either answer, so it is not judged.
	FingerprintEither = "either"
)

// DefaultReplayIgnore lists the response headers replay-identical does not
// compare by default: they legitimately differ between a response and its
// replay. Besides these names, a header whose name ends in "Request-Id",
// "Trace-Id", "Correlation-Id" or "Replayed" is ignored (see
// [Contract.ignored]).
var DefaultReplayIgnore = []string{
	// Per message, by definition.
	"Date", "Age", "Expires", "Server-Timing", "X-Response-Time", "X-Runtime",
	// Hop-by-hop (RFC 9110 §7.6.1) and framing: a replay may be chunked
	// where the first response had a length; the body is compared anyway.
	"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "TE", "Trailer", "Upgrade", "Content-Length",
	// Replay markers and per-request tracing.
	"Idempotent-Replayed", "Idempotency-Replayed", "X-Idempotent-Replayed", "Traceparent", "Tracestate",
	// A session cookie may be renewed on every response.
	"Set-Cookie",
	// Retry-After belongs to the in-flight answer, not to the stored one.
	"Retry-After",
}

var ignoredSuffixes = []string{"request-id", "trace-id", "correlation-id", "replayed"}

// Contract is everything a service may legitimately choose about its
// idempotency and the checkers must be told: the status codes, how it
// fingerprints a payload, which response headers a replay must repeat and
// the time bounds. A run writes it into its history's meta event
// ([Contract.Meta]), and `idemchaos check` re-judges with it
// ([ContractFromMeta]).
type Contract struct {
	// Profile holds the status codes (ietf by default).
	Profile Profile
	// Fingerprint is strict, canonical or either (the default, "").
	Fingerprint string
	// ReplayHeaders, when non-nil, are the only headers compared on a
	// replay (besides status and body). Nil compares every header the
	// first response carried, except ReplayIgnore.
	ReplayHeaders []string
	// ReplayIgnore are the headers never compared; nil means
	// [DefaultReplayIgnore].
	ReplayIgnore []string
	// DecisionBound is how long after faults heal a retried key may stay
	// undecided (default 5s).
	DecisionBound time.Duration
	// RetentionGap is the gap between attempts of one key past which a
	// duplicate is blamed on record retention (default 30s).
	RetentionGap time.Duration
	// MaxKeyLength is the longest idempotency key the service keeps whole
	// (0: no limit); carried in the meta so a check says what the run
	// checked its keys against.
	MaxKeyLength int
	// States is the declared order of the resources' states, first to
	// last (created, paid, refunded): forward-only's. Nil: forward-only
	// has no order to judge by.
	States []string
	// MaxDeliveries is the most deliveries of one message a consumer
	// scenario allows: bounded-redelivery's bound (0:
	// [DefaultMaxDeliveries]).
	MaxDeliveries int
	_             struct{}
}

// RepeatRefuse is the contract's repeat of a service that refuses every
// repeat of a key with one status ([Profile.Refuse]) instead of replaying.
const RepeatRefuse = "refuse"

// DefaultContract is the contract the checkers judge by unless told
// otherwise: ietf codes, either fingerprint, every header of the first
// response compared on replay except [DefaultReplayIgnore], 5s, 30s.
func DefaultContract() Contract {
	return Contract{Profile: DefaultProfile(), DecisionBound: 5 * time.Second, RetentionGap: 30 * time.Second}
}

// Validate reports a contract the checkers cannot judge by.
func (c Contract) Validate() error {
	switch c.Fingerprint {
	case "", FingerprintStrict, FingerprintCanonical, FingerprintEither:
	default:
		return fmt.Errorf("%w: fingerprint %q (want strict, canonical or either)", ErrBadContract, c.Fingerprint)
	}
	for _, code := range []struct {
		name string
		v    int
	}{{"missing_key", c.Profile.MissingKey}, {"reuse", c.Profile.Reuse}, {"in_flight", c.Profile.InFlight}} {
		if code.v != 0 && (code.v < 100 || code.v > 599) {
			return fmt.Errorf("%w: %s %d is not an HTTP status (100-599, or 0)", ErrBadContract, code.name, code.v)
		}
	}
	if c.Profile.Reuse == 0 || c.Profile.InFlight == 0 {
		return fmt.Errorf("%w: reuse and in_flight need a status code", ErrBadContract)
	}
	if c.Profile.Reuse >= 200 && c.Profile.Reuse < 300 || c.Profile.InFlight >= 200 && c.Profile.InFlight < 300 {
		return fmt.Errorf("%w: a rejection cannot be a 2xx", ErrBadContract)
	}
	if c.DecisionBound < 0 || c.RetentionGap < 0 {
		return fmt.Errorf("%w: a negative bound", ErrBadContract)
	}
	if r := c.Profile.Refuse; r != 0 && (r < 400 || r > 499) {
		return fmt.Errorf("%w: repeat_status %d: a refusal is a 4xx", ErrBadContract, r)
	}
	if c.MaxDeliveries < 0 {
		return fmt.Errorf("%w: max_deliveries %d: a count of deliveries is 1 or more (0: the default)", ErrBadContract, c.MaxDeliveries)
	}
	for i, st := range c.States {
		if st == "" {
			return fmt.Errorf("%w: states: an empty state name", ErrBadContract)
		}
		if slices.Contains(c.States[:i], st) {
			return fmt.Errorf("%w: states: %q declared twice", ErrBadContract, st)
		}
	}
	return nil
}

// Meta returns the contract as a history's meta event carries it: every
// field explicit, so that a later reader with other defaults judges alike.
func (c Contract) Meta() *history.Contract {
	c = c.filled()
	m := &history.Contract{
		Profile: c.Profile.Name, MissingKey: c.Profile.MissingKey, Reuse: c.Profile.Reuse, InFlight: c.Profile.InFlight,
		Fingerprint: c.Fingerprint, ReplayHeaders: slices.Clone(c.ReplayHeaders), ReplayIgnore: slices.Clone(c.ReplayIgnore),
		DecisionBoundMS: c.DecisionBound.Milliseconds(), RetentionGapMS: c.RetentionGap.Milliseconds(),
		MaxKeyLength: int64(c.MaxKeyLength), States: slices.Clone(c.States), MaxDeliveries: c.MaxDeliveries,
	}
	if c.Profile.Refuse != 0 {
		m.Repeat, m.RepeatStatus = RepeatRefuse, c.Profile.Refuse
	}
	if m.ReplayIgnore == nil {
		m.ReplayIgnore = []string{}
	}
	return m
}

// ContractFromMeta returns the contract a history's meta event carries,
// with the defaults for what it does not say; nil gives [DefaultContract].
func ContractFromMeta(m *history.Contract) (Contract, error) {
	c := DefaultContract()
	if m == nil {
		return c, nil
	}
	switch m.Profile {
	case "", "custom":
		if m.Reuse != 0 || m.InFlight != 0 || m.Profile == "custom" {
			c.Profile = Profile{Name: "custom", MissingKey: m.MissingKey, Reuse: m.Reuse, InFlight: m.InFlight}
		}
	default:
		p, err := ProfileByName(m.Profile)
		if err != nil {
			return Contract{}, err
		}
		// The codes written are the ones judged by, even when a later
		// version of a built-in profile changed.
		if m.Reuse != 0 || m.InFlight != 0 {
			p.MissingKey, p.Reuse, p.InFlight = m.MissingKey, m.Reuse, m.InFlight
		}
		c.Profile = p
	}
	switch m.Repeat {
	case "":
	case RepeatRefuse:
		if m.RepeatStatus == 0 {
			return Contract{}, fmt.Errorf("%w: repeat refuse needs its repeat_status", ErrBadContract)
		}
		c.Profile.Refuse = m.RepeatStatus
	default:
		return Contract{}, fmt.Errorf("%w: repeat %q (want refuse, or nothing for a replay)", ErrBadContract, m.Repeat)
	}
	c.Fingerprint = m.Fingerprint
	c.ReplayHeaders = slices.Clone(m.ReplayHeaders)
	c.ReplayIgnore = slices.Clone(m.ReplayIgnore)
	if m.DecisionBoundMS > 0 {
		c.DecisionBound = time.Duration(m.DecisionBoundMS) * time.Millisecond
	}
	if m.RetentionGapMS > 0 {
		c.RetentionGap = time.Duration(m.RetentionGapMS) * time.Millisecond
	}
	c.MaxKeyLength = int(m.MaxKeyLength)
	c.States = slices.Clone(m.States)
	c.MaxDeliveries = m.MaxDeliveries
	return c, c.Validate()
}

// filled returns c with its defaults made explicit.
func (c Contract) filled() Contract {
	d := DefaultContract()
	if c.Profile.Name == "" && c.Profile.Reuse == 0 && c.Profile.InFlight == 0 {
		c.Profile = d.Profile
	}
	if c.Fingerprint == "" {
		c.Fingerprint = FingerprintEither
	}
	if c.ReplayIgnore == nil {
		c.ReplayIgnore = slices.Clone(DefaultReplayIgnore)
	}
	if c.DecisionBound == 0 {
		c.DecisionBound = d.DecisionBound
	}
	if c.RetentionGap == 0 {
		c.RetentionGap = d.RetentionGap
	}
	return c
}

// Options returns the checker options that judge by c.
func (c Contract) Options() []Option {
	return []Option{func(cfg *config) { cfg.contract = c.filled() }}
}

// WithContract sets the whole contract (see [Contract]).
func WithContract(c Contract) Option { return c.Options()[0] }

// LoadOptions returns how a history must be loaded for c to be judged:
// which response headers to keep.
func (c Contract) LoadOptions() history.LoadOptions {
	c = c.filled()
	keep := slices.Clone(history.DefaultKeepHeaders)
	if c.ReplayHeaders != nil {
		return history.LoadOptions{KeepHeaders: append(keep, c.ReplayHeaders...)}
	}
	return history.LoadOptions{KeepHeaders: keep, KeepHeader: func(name string) bool { return !c.ignored(name) }}
}

// ForContract returns the named invariants (all seven, in [Names] order,
// when names is empty) judging by c.
func ForContract(c Contract, names ...string) (Checker, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		names = Names()
	}
	cs := make([]Checker, 0, len(names))
	for _, n := range names {
		ch, err := ByName(n, c.Options()...)
		if err != nil {
			return nil, err
		}
		cs = append(cs, ch)
	}
	return All(cs...), nil
}

// ignored reports whether a replay need not repeat the named header.
func (c Contract) ignored(name string) bool {
	for _, n := range c.ReplayIgnore {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	if c.ReplayIgnore != nil && !slices.Equal(c.ReplayIgnore, DefaultReplayIgnore) {
		return false // a list of one's own replaces the default rules
	}
	l := strings.ToLower(name)
	for _, s := range ignoredSuffixes {
		if strings.HasSuffix(l, s) {
			return true
		}
	}
	return false
}

// compared returns the headers of first that a replay must repeat.
func (c Contract) compared(first history.Headers) []string {
	if c.ReplayHeaders != nil {
		return c.ReplayHeaders
	}
	var out []string
	for _, f := range first {
		if !c.ignored(f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// same returns the fingerprint under which two attempts carry the same
// payload and the second must be answered with the first one's replay.
func (c Contract) same(a *history.Attempt) uint64 {
	if c.Fingerprint == FingerprintCanonical {
		return a.ReqCanon
	}
	return a.ReqHash
}

// distinct returns the fingerprint under which two attempts carry
// different payloads, so that the second is a reused key to reject.
func (c Contract) distinct(a *history.Attempt) uint64 {
	if c.Fingerprint == FingerprintStrict {
		return a.ReqHash
	}
	return a.ReqCanon
}

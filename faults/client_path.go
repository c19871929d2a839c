package faults

import (
	"context"
	"time"
)

// ClientPath is implemented by faults that act on a client's path in a
// client scenario (issue 24): the per-intent fault proxy in front of the
// upstream asks the fault what to do with each attempt it hits, and does
// it — forward or not, answer in the upstream's stead, cut, stall or slow
// the answer. The kind says what; the proxy owns the doing and the
// recording (by "proxy", forwarded or not), so every kind is data.
type ClientPath interface {
	Fault
	ClientAnswer() Answer
}

// The ways an [Answer] gives the client no answer at all.
const (
	// CutReset resets the client's connection (RST): "connection reset".
	CutReset = "reset"
	// CutStall holds the client's connection open without a byte until
	// the client gives up (its own deadline) or its invocation ends.
	CutStall = "stall"
	// CutRefuse closes the client's connection without an answer and
	// without forwarding the request: nothing was sent on.
	CutRefuse = "refuse"
)

// Answer is what the fault proxy does with one attempt a [ClientPath]
// fault hits.
type Answer struct {
	// Forward says the request goes on to the upstream (it executes); the
	// upstream's answer is then replaced (Status), dropped (Cut) or
	// delayed (Delay). Not forwarded, the upstream never sees it.
	Forward bool
	// Status is the status the proxy answers with in the upstream's stead
	// (0: the upstream's own answer passes, or Cut gives none).
	Status int
	// Code is the error code of the default body (the reference's
	// {"error": code, "message": …} shape).
	Code string
	// RetryAfter is the Retry-After the answer carries (0: none), sent in
	// whole seconds, rounded up.
	RetryAfter time.Duration
	// Cut is CutReset, CutStall or CutRefuse: no answer at all.
	Cut string
	// Delay holds the upstream's answer back this long (a slow success);
	// with CutStall, it bounds the stall.
	Delay time.Duration
	// Headers and Body replace the default error shape: what the user's
	// service really answers with that status (never probed from it).
	Headers map[string]string
	Body    string
}

// Proxied says the answer comes from the proxy, not the upstream: it
// replaced, dropped or withheld the upstream's answer.
func (a Answer) Proxied() bool { return a.Status != 0 || a.Cut != "" || !a.Forward }

// ClientPathOf returns f's answer on a client's path, and false when f
// does not act there.
func ClientPathOf(f Fault) (Answer, bool) {
	c, ok := f.(ClientPath)
	if !ok {
		return Answer{}, false
	}
	return c.ClientAnswer(), true
}

// ClientOnly is implemented by kinds that act only on a client's path,
// never in a server scenario (they have no Route and no Apply).
type ClientOnly interface {
	ClientOnly()
}

// IsClientOnly says whether f acts only on a client's path.
func IsClientOnly(f Fault) bool { _, ok := f.(ClientOnly); return ok }

// errorShape holds the scenario's own error shape for a kind's answer:
// the content type and body the user's service answers with (default: the
// reference's JSON error).
type errorShape struct {
	// ContentType is the answer's Content-Type (default application/json).
	ContentType string `yaml:"content_type" json:"content_type"`
	// Body is the answer's body (default the reference's error body,
	// {"error": "<code>", "message": "..."}).
	Body string `yaml:"body" json:"body"`
}

// headers are the answer's headers the scenario gave (nil: the default).
func (e errorShape) headers() map[string]string {
	if e.ContentType == "" {
		return nil
	}
	return map[string]string{"Content-Type": e.ContentType}
}

// proxyAnswer is embedded by the kinds the client path's proxy answers by
// itself (ClientAnswer): they act on no part of the world, and only in
// client scenarios.
type proxyAnswer struct{}

// ClientOnly implements [ClientOnly].
func (proxyAnswer) ClientOnly() {}

// Apply implements [Fault]; the proxy acts from ClientAnswer.
func (proxyAnswer) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (proxyAnswer) Heal(context.Context, World) error { return nil }

// comeBackLater settles the Retry-After of an answer that asks the client
// to come back later (503, 409 in flight): a wait of 1 s unless one is
// given, none at all with no_retry_after.
func comeBackLater(kind string, wait *time.Duration, none bool) error {
	switch {
	case *wait < 0:
		return invalid(kind, "retry_after must be ≥ 0, got %s", *wait)
	case none:
		*wait = 0
	case *wait == 0:
		*wait = time.Second
	}
	return nil
}

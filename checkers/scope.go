package checkers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// scope is the idempotency scope of DESIGN §3: tenant, endpoint and key.
// The report draws a violation's (tenant, key) over every endpoint that
// used it: the scopes [Index.KeyAttempts] joins.
type scope struct{ tenant, method, path, key string }

func scopeOf(a *history.Attempt) scope { return scope{a.Tenant, a.Method, a.Path, a.Key} }

// class is what one attempt's ending says about execution.
type class uint8

const (
	// indeterminate: info, 5xx or 408. The request may have executed.
	indeterminate class = iota
	// succeeded: a 2xx. The intent is acknowledged.
	succeeded
	// pending: the in-flight status, 425 or 429: "not now", nothing executed
	// by this attempt, nothing decided.
	pending
	// rejected: fail (provably unsent) or any other status: decided, and
	// nothing executed.
	rejected
)

func classify(a *history.Attempt, p Profile) class {
	switch {
	case a.Outcome == history.Fail:
		return rejected
	case a.Outcome == history.Info:
		return indeterminate
	case a.Status >= 200 && a.Status < 300:
		return succeeded
	case a.Status >= 500 || a.Status == 408:
		return indeterminate
	case p.Refuse != 0 && a.Status == p.Refuse:
		return rejected // the service's answer to every repeat
	case a.Status == p.InFlight || a.Status == 425 || a.Status == 429:
		return pending
	}
	return rejected
}

func overlaps(a, b *history.Attempt, end int64) bool {
	return a.Invoke < b.End(end) && b.Invoke < a.End(end)
}

// overlapsOpen is [overlaps] with a timed-out attempt held open until the
// service quiesced ([history.History.OpenUntil]): its work may have run
// on the server after the client gave up.
func overlapsOpen(h *history.History, a, b *history.Attempt) bool {
	return a.Invoke < h.OpenUntil(b) && b.Invoke < h.OpenUntil(a)
}

// describeScope names a scope for an explanation: "key k-9, tenant t1, POST /v1/orders".
func describeScope(s scope) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key %s", s.key)
	if s.tenant != "" {
		fmt.Fprintf(&b, ", tenant %s", s.tenant)
	}
	if s.method != "" || s.path != "" {
		fmt.Fprintf(&b, ", %s %s", s.method, s.path)
	}
	return b.String()
}

// opList writes "op 5", "ops 17 and 18" or "ops 1, 2 and 3".
func opList(ops []int64) string {
	switch len(ops) {
	case 0:
		return "no ops"
	case 1:
		return "op " + strconv.FormatInt(ops[0], 10)
	}
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = strconv.FormatInt(o, 10)
	}
	if len(parts) > 8 {
		parts = append(parts[:7], fmt.Sprintf("… (%d in all)", len(ops)))
		return "ops " + strings.Join(parts, ", ")
	}
	return "ops " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func opsOf(h *history.History, idx []int32) []int64 {
	if len(idx) == 0 {
		return nil // as a violation that names no attempt decodes from a partition's result
	}
	ops := make([]int64, len(idx))
	for i, j := range idx {
		ops[i] = h.Attempts[j].Op
	}
	return ops
}

// at formats a history timestamp as seconds since the run started.
func at(ns int64) string {
	return time.Duration(ns).Round(time.Millisecond).String()
}

func statusOf(a *history.Attempt) string {
	if a.Outcome != history.OK {
		return a.Outcome.String()
	}
	return strconv.Itoa(a.Status)
}

// quoteBody shows a response body for an explanation.
func quoteBody(a *history.Attempt) string {
	if a.RespLen == 0 {
		return "an empty body"
	}
	return strconv.Quote(a.RespPreview)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countOf says how many effects of a kind: "1 order effect", "2 order
// effects"; a kind that says nothing ("", "effect") is left out: "2 effects".
func countOf(n int, kind string) string {
	if kind == "" || kind == "effect" || kind == "effects" {
		return fmt.Sprintf("%d %s", n, plural(n, "effect", "effects"))
	}
	return fmt.Sprintf("%d %s %s", n, kind, plural(n, "effect", "effects"))
}

// refusedRepeat reports whether a is the refusal a service that refuses every
// repeat answers a repeat with (contract repeat: refuse).
func refusedRepeat(a *history.Attempt, p Profile) bool {
	return p.Refuse != 0 && a.Outcome == history.OK && a.Status == p.Refuse
}

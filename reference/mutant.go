package reference

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/internal/suggest"
)

// Mutant describes one deliberately broken variant of the reference
// service: one known idempotency pitfall, the invariant that should catch
// it, and what it needs from the environment to run at all.
type Mutant struct {
	// Name is the value of --mutant.
	Name string
	// Pitfall is the mistake in plain words.
	Pitfall string
	// Invariant is the invariant whose checker catches it (DESIGN §4); a
	// catch matrix counts a mutant caught only when this one is violated.
	Invariant string
	// Standby says the mutant reads a streaming standby: the environment
	// must start one, or the mutant cannot run.
	Standby bool
	// Consumer says the mutant lives in the queue consumer: its service is
	// started with one.
	Consumer bool
}

// Mutant names. Each switches exactly one small, commented deviation in the
// real code path; grep for the constant to find it.
const (
	mutantNone                 = ""
	mutantNoKey                = "no-key"
	mutantCheckThenInsert      = "check-then-insert"
	mutantExecuteThenRecord    = "execute-then-record"
	mutantBodyHashKey          = "body-hash-key"
	mutantNoFingerprint        = "no-fingerprint"
	mutantEmptyReplay          = "empty-replay"
	mutantRegenerateOnReplay   = "regenerate-on-replay"
	mutantGlobalNamespace      = "global-namespace"
	mutantProcessingReexecutes = "processing-reexecutes"
	mutantNoLease              = "no-lease"
	mutantReplicaRead          = "replica-read"
	mutantShortRetention       = "short-retention"
	mutantConsumerNoDedupe     = "consumer-no-dedupe"
	mutantCallbackAccumulates  = "callback-accumulates"
	mutantCommitAfterResponse  = "commit-after-response"
)

var mutants = []Mutant{
	{Name: mutantNoKey, Invariant: "exactly-once",
		Pitfall: "the key is ignored: every request executes, so a retry after a lost response (the client timed out, but the server had executed) creates a second order"},
	{Name: mutantCheckThenInsert, Invariant: "exactly-once",
		Pitfall: "SELECT the key, then INSERT it: two racing duplicates (a double click, a redelivered request) both see 'absent' and both execute"},
	{Name: mutantExecuteThenRecord, Invariant: "exactly-once",
		Pitfall: "the business write runs first and the key record is written afterwards: concurrent duplicates both pass the check before either is recorded"},
	{Name: mutantBodyHashKey, Invariant: "exactly-once",
		Pitfall: "the request-body hash is used as the key: a second, legitimate order with an identical body is swallowed and gets the first order's response"},
	{Name: mutantNoFingerprint, Invariant: "reuse-rejected",
		Pitfall: "the request fingerprint is not checked: the same key sent with a different payload replays the first response instead of being refused with 422"},
	{Name: mutantEmptyReplay, Invariant: "replay-identical",
		Pitfall: "a duplicate gets 200 with an empty body instead of the stored response, so the client never learns the order's id"},
	{Name: mutantRegenerateOnReplay, Invariant: "replay-identical",
		Pitfall: "the replay regenerates the order id and timestamp instead of returning the stored bytes, so a retry sees a different order than the first answer"},
	{Name: mutantGlobalNamespace, Invariant: "tenant-isolation",
		Pitfall: "the key scope ignores the tenant: tenant B sending a key tenant A already used gets A's response (and A's data)"},
	{Name: mutantProcessingReexecutes, Invariant: "in-flight-conflict",
		Pitfall: "a duplicate that finds the record still 'processing' executes again instead of answering 409 (in flight, retry later)"},
	{Name: mutantNoLease, Invariant: "eventually-decided",
		Pitfall: "'processing' has no lease: when the request holding it dies, the key is stuck and every retry gets 409 forever"},
	{Name: mutantReplicaRead, Invariant: "exactly-once", Standby: true,
		Pitfall: "the idempotency lookup reads a lagging read replica: a retry after a success finds no record yet and executes again"},
	{Name: mutantShortRetention, Invariant: "exactly-once",
		Pitfall: "retention is a hand-typed value never checked against the clients' retry window (here a tenth of it): a late but legitimate retry finds its record purged and executes again"},
	{Name: mutantConsumerNoDedupe, Invariant: "exactly-once", Consumer: true,
		Pitfall: "the outbox consumer does not record the event ids it consumed: a redelivery after a crash between the effect and the ack sends the notification twice"},
	{Name: mutantCallbackAccumulates, Invariant: "exactly-once",
		Pitfall: "each delivery of a payment callback adds its amount, instead of crediting once per order on the state transition: a provider's redelivery pays twice"},
	{Name: mutantCommitAfterResponse, Invariant: "durable-ack",
		Pitfall: "the response is written before the transaction commits: a crash in between loses an order the client was told exists"},
}

// Mutants lists every mutant the reference service knows, in a stable order.
// The returned slice is a copy.
func Mutants() []Mutant { return slices.Clone(mutants) }

// mutant is the running service's (at most one) active deviation.
type mutant string

// LookupMutant returns the mutant of that name ("" is the correct service:
// a zero Mutant). An unknown name is an error wrapping [ErrUnknownMutant]
// that suggests the closest known name and lists them all.
func LookupMutant(name string) (Mutant, error) {
	if name == mutantNone {
		return Mutant{}, nil
	}
	names := make([]string, len(mutants))
	for i, m := range mutants {
		if m.Name == name {
			return m, nil
		}
		names[i] = m.Name
	}
	return Mutant{}, fmt.Errorf("%w %q%s (known: %s)", ErrUnknownMutant, name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

func parseMutant(name string) (mutant, error) {
	m, err := LookupMutant(name)
	return mutant(m.Name), err
}

func (m mutant) is(name string) bool { return string(m) == name }

// disablesBackstop reports whether the business-level unique constraints
// are left unfilled. Only the mutants whose pitfall is a duplicate
// execution do so: with the backstop on, their duplicate would be a 500 and
// the pitfall would be invisible. The correct service always has it.
func (m mutant) disablesBackstop() bool {
	switch string(m) {
	case mutantNoKey, mutantCheckThenInsert, mutantExecuteThenRecord,
		mutantProcessingReexecutes, mutantReplicaRead, mutantShortRetention,
		mutantCallbackAccumulates:
		return true
	}
	return false
}

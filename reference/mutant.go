package reference

import (
	"fmt"
	"slices"
)

// Mutant describes one deliberately broken variant of the reference
// service. Each embodies one pitfall named in the seed articles; the
// invariant is the DESIGN §4 checker that should catch it.
type Mutant struct {
	// Name is the value of --mutant.
	Name string
	// Pitfall is the mistake in plain words, with its seed reference.
	Pitfall string
	// Invariant is the DESIGN §4 invariant whose checker catches it.
	Invariant string
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
	{mutantNoKey, "the key is ignored: every request executes, so a retry after a lost response creates a second order (seed 000 §一, §三)", "exactly-once"},
	{mutantCheckThenInsert, "SELECT the key, then INSERT it: two racing duplicates both see 'absent' and both execute (seed 002 §五)", "exactly-once"},
	{mutantExecuteThenRecord, "the business write runs first and the key record is written afterwards: concurrent duplicates both pass the check (seed 000 §三 执行顺序)", "exactly-once"},
	{mutantBodyHashKey, "the request-body hash is used as the key: a second legitimate intent with an identical body is swallowed and gets the first intent's response (seed 000 §三 键的内容, §六)", "exactly-once"},
	{mutantNoFingerprint, "the request fingerprint is not checked: the same key with a different payload replays the first response instead of 422 (seed 000 §三 保留窗口与参数校验)", "reuse-rejected"},
	{mutantEmptyReplay, "a duplicate gets 200 with an empty body instead of the stored response (seed 000 §三, §六 命中重复时返回空响应)", "replay-identical"},
	{mutantRegenerateOnReplay, "the replay regenerates the order id and timestamp instead of returning the stored bytes (seed 002 §六 不重新计算易变字段)", "replay-identical"},
	{mutantGlobalNamespace, "the key scope ignores the tenant: tenant B reusing tenant A's key gets A's response (seed 000 §三 键的作用域)", "tenant-isolation"},
	{mutantProcessingReexecutes, "a duplicate that finds the record 'processing' executes again instead of answering 409 (seed 002 §四 状态机)", "in-flight-conflict"},
	{mutantNoLease, "'processing' has no lease: when its holder dies the key is stuck and every retry gets 409 forever (seed 002 §四 细节二)", "eventually-decided"},
	{mutantReplicaRead, "the idempotency lookup reads a lagging replica; a retry after success finds nothing and executes again (seed 000 §四, §三 幂等查询走强一致读)", "exactly-once"},
	{mutantShortRetention, "retention is a hand-typed value never checked against the retry window (a tenth of the configured one): a late but legitimate retry finds its record purged and executes again (seed 000 §六)", "exactly-once"},
	{mutantConsumerNoDedupe, "the outbox consumer does not record consumed event ids: a redelivery after a crash between effect and ack sends the notification twice (seed 002 §九)", "exactly-once"},
	{mutantCallbackAccumulates, "each payment callback delivery adds its amount, instead of crediting once per order by state transition (seed 002 §八 严禁用回调金额直接累加余额)", "exactly-once"},
	{mutantCommitAfterResponse, "the response is written before the transaction commits; a crash in between loses an acknowledged order (seed 002 §四 细节一)", "durable-ack"},
}

// Mutants lists every mutant the reference service knows, in a stable order.
// The returned slice is a copy.
func Mutants() []Mutant { return slices.Clone(mutants) }

// mutant is the running service's (at most one) active deviation.
type mutant string

func parseMutant(name string) (mutant, error) {
	if name == mutantNone {
		return mutantNone, nil
	}
	for _, m := range mutants {
		if m.Name == name {
			return mutant(name), nil
		}
	}
	return mutantNone, fmt.Errorf("mutant %q: %w", name, ErrUnknownMutant)
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

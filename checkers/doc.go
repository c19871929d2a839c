// Package checkers holds the invariants of DESIGN §4, each a small value with
// a name and a pure check over a loaded [history.History] and the effects the
// system produced. It imports only the history package and the standard
// library, so a history produced by anyone can be checked offline.
//
// The exported API:
//
//   - [Checker]: Name and Check. Constructors return the interface:
//     [ExactlyOnce], [ReplayIdentical], [ReuseRejected], [InFlightConflict],
//     [TenantIsolation], [EventuallyDecided], [DurableAck]; and the client
//     suite, which judges the caller in a client run's history (meta mode
//     "client"): [KeyStable], [PayloadStable], [KeyPerIntent],
//     [KeyedRetry], [NoRetryPermanent], [RetryAfterHonoured], [Backoff],
//     [Bounded], [TruthfulOutcome], and [ExactlyOnce] per intent.
//   - [Register]: each invariant registers itself from its own file (a
//     [Registration]: name, constructor, place in its suites, start rank),
//     as fault kinds do; a new invariant is one file plus its goldens.
//     [All] composes checkers; [Default] returns the seven of the server
//     suite; [ByName] finds one by its invariant name; [Names] lists the
//     server suite, [SuiteNames] any suite ([SuiteServer], [SuiteClient]),
//     [Known] every registered invariant; [DefaultNames] the suite a
//     history's mode is judged by when it names none.
//   - [ClientContract]: what a client under test declares it keeps
//     (budget, retryable and permanent statuses, minimum backoff, jitter,
//     unknown); [ClientContractFromMeta] reads the meta's client_contract,
//     [WithClientContract] overrides it.
//   - [Result], [Verdict] and [Violation]: three-valued verdicts (pass,
//     violation, unknown) with plain-words explanations. Unknown is never a pass.
//   - [Contract]: everything a service may legitimately choose (status
//     codes, payload fingerprint, replay headers, bounds). [ForContract]
//     builds the invariants judging by one; [Contract.Meta] and
//     [ContractFromMeta] carry it in a history's meta event;
//     [Contract.LoadOptions] says which headers a load must keep.
//   - [Option] values ([WithContract], [WithProfile], [WithHeaders],
//     [WithFingerprint], [WithDecisionBound], [WithRetentionGap]) set parts
//     of the contract; [WithDeadline] gives a Check a time budget after
//     which unfinished keys are unknown.
//   - [Profile] and [ProfileByName]: status-code contracts (ietf, stripe, custom).
//   - [Judge]: the one verdict over a whole history, step by step, with the
//     rules that decide "nothing to judge" and "environment error" from the
//     history alone ([Judgement], [StepResult], the fourth outcome
//     [EnvironmentError]); [FactsOf], [Facts.Add] and [Decide] apply the
//     same rules to a history checked in parts (partitions, machines).
//   - [CheckParts], [Part], [Merge]: a history checked in parts (keys by
//     partition, with [WithGlobals]); a Part keeps beside its [Result] what
//     the merge needs, and a checker whose whole is more than the sum of its
//     parts merges them its own way, in its own file.
//
// Every checker runs in time linear in the history (plus sorting the
// attempts of one key; in-flight-conflict sweeps a key in n log n) and does
// no I/O.
package checkers

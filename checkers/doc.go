// Package checkers holds the invariants of DESIGN §4, each a small value with
// a name and a pure check over a loaded [history.History] and the effects the
// system produced. It imports only the history package and the standard
// library, so a history produced by anyone can be checked offline.
//
// The exported API:
//
//   - [Checker]: Name and Check. Constructors return the interface:
//     [ExactlyOnce], [ReplayIdentical], [ReuseRejected], [InFlightConflict],
//     [TenantIsolation], [EventuallyDecided], [DurableAck].
//   - [All] composes checkers; [Default] returns all seven; [ByName] finds
//     one by its invariant name; [Names] lists them.
//   - [Result], [Verdict] and [Violation]: three-valued verdicts (pass,
//     violation, unknown) with plain-words explanations. Unknown is never a pass.
//   - [Option] values ([WithProfile], [WithHeaders], [WithDecisionBound],
//     [WithRetentionGap]) set what services legitimately differ in.
//   - [Profile] and [ProfileByName]: status-code contracts (ietf, stripe, custom).
//
// Every checker runs in time linear in the history (plus sorting the few
// attempts of one key) and does no I/O.
package checkers

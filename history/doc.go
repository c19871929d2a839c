// Package history is the one model every part of idemchaos shares: the
// JSONL history format (version 1) that records what a run did and what the
// system under test really produced.
//
// A history is one JSON object per line, in the order the harness observed
// them. The first line is a meta event naming the format version. Readers
// ignore unknown fields, so producers may add fields freely.
//
// The exported API:
//
//   - [Event], [Request], [Response], [Header], [Headers]: one line of a history;
//     an Event marshals to its line with encoding/json as well ([Event.MarshalJSON]).
//   - [Reader] and [NewReader]: a streaming decoder with constant memory in the
//     number of events; errors are [*LineError] values carrying the line number.
//   - [Writer] and [NewWriter]: an encoder that writes one event per line.
//   - [History], [Attempt], [Fault], [Effect] and [Load]: the compact,
//     per-attempt form the checkers read, built in one streaming pass.
//   - [Outcome]: ok, fail or info, the three ways an attempt can end.
//   - [Step] and [OracleRead], with [History.Through], [History.StepCount],
//     [History.StepInfo] and [History.StepAttempts]: what a run writes about
//     itself (its steps and their expectations, a budget that ran out, its
//     oracle's reads, environment errors), so that a check of the file
//     reaches the run's verdict.
//
// Bodies round-trip byte-exactly: valid UTF-8 is written as the "body" string,
// anything else as "body_b64". An attempt with no completion event loads as
// [Info] (indeterminate), because the server may or may not have executed it.
package history

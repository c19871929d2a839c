// Package scaffold turns an OpenAPI 3.0/3.1 document into idemchaos
// scenarios: one per operation that declares an idempotency-key header (or
// that the user names), with a request body generated from the schema, the
// tenant and status contract inferred from the document, a suite of faults
// suited to a write endpoint, and an effects block left as a marked TODO.
//
// Everything the document does not say for certain is a guess, and every
// guess is written next to the value it chose, as a YAML comment, so the
// user reviews the file rather than trusts it. The output is text (comments
// are the point), and it passes scenarios.Parse as written.
package scaffold

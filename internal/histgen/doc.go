// Package histgen generates large, realistic, clean histories for the
// benchmarks of the history and checkers packages.
//
// A generated history is what a correct idempotent service under faults
// would produce: every intent is acknowledged once and has exactly one
// effect, retries after an indeterminate attempt get the byte-identical
// replay, and a double click that arrives while the first attempt runs gets
// 409. It therefore passes every checker, so a benchmark measures the full
// work of a clean run rather than an early exit on a violation.
//
// The exported API: [Config] and [Default] shape a history, [Generate]
// writes it as JSONL.
package histgen

// Package driver sends a plan of client intents to a service, with bounded
// concurrency, a bounded request count and a hard deadline, and records every
// wire-level request as an attempt in a history.
//
// The exported API:
//
//   - [Intent]: one thing a client means to do once.
//   - [Config] and [Run]: execute intents and return [Stats].
//   - [Model]: how clients behave — [Correct], [KeyPerAttempt], [Retry4xx].
//   - [RetryPolicy]: exponential backoff with full jitter, honouring Retry-After.
//   - [Recorder] and [NewRecorder]: the run clock, op ids and the history stream
//     that the driver, the faults and the oracles all write to.
//   - [Route] and [Router]: how a fault aims at one attempt by sending it on
//     its own connection through its own faulted path.
//
// Recording is exact: every request put on the wire is one invoke event that
// ends in ok, fail (provably never sent) or info (anything else); an attempt
// a [Router] could not route is an invoke and a "not sent" fail, so the
// history always loads. The driver writes HTTP/1.1 itself on connections it
// keeps alive (client.go) rather than through http.Transport, which silently
// re-sends a request that carries an Idempotency-Key when a reused
// connection fails and hands every request between goroutines: here the
// attempt's goroutine writes its request and reads the answer (parsed by
// http.ReadResponse), and a re-send is always a new, recorded attempt.
package driver

// Package refbench measures the reference service against pgbench running
// the same SQL, on one throwaway database and in one run: the service's
// requests/s and p99 for new keys and for replays at a fixed concurrency,
// pgbench's transactions/s for the same statements (reference.BenchSQL) as
// the yardstick, and the structural ceiling of a replay (an HTTP round trip
// to a trivial handler, plus the claim statement alone through pgx).
//
// Workloads alternate in slices (service, pgbench, service, …) so that load
// from anything else on the machine hits both sides alike. The service's
// load generator is wrk, a separate C process with as many threads as
// pgbench's (-t 2, -j 2) and the same number of kept-alive connections, so
// that on both sides the client neither shares the server's runtime nor
// costs much next to it. (When wrk is missing, an in-process Go client
// loads the service instead; it then shares the service's Go runtime, its
// Ps and its GC, whereas pgbench's client shares nothing with Postgres.)
// Both sides replay 1000 stored records of one tenant, uniformly at
// random.
//
// It is shared by reference's benchmark (go test -bench VersusPgbench) and
// by idemchaos bench.
//
// The exported API:
//
//   - [Config] and [Run]: run the comparison, returning a [Result] of
//     [Phase] values.
//   - [StartHTTPFloor]: the trivial HTTP handler (fixed 150-byte 201), also
//     the target of the driver-versus-wrk measurement.
//   - [Body]: the order body every request posts.
package refbench

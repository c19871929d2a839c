// Package harness runs scenarios against a system under test and judges
// them: it starts the target (the reference service with one mutant, or a
// user's service behind the harness's proxies), generates a plan from the
// scenario and a seed, makes the faults happen while the driver sends the
// plan's traffic, reads the effects, records everything as a history and
// checks the invariants.
//
// The exported API:
//
//   - [Test], [Case], [Step], [TB]: the Terraform-style Go API for tests.
//   - [Runner] and [Runner.Run]: run one scenario, returning an [Outcome].
//   - [Plan] and [Runner.Shrink]: the generated workload, and its
//     minimisation when it fails.
//   - [MaybeChild]: lets a binary serve as the reference's child processes.
//
// Sub-packages hold the parts: driver (traffic), oracle (effects), env,
// pgcluster, proxy, proc and runenv (the environments).
package harness

// Package harness runs scenarios against a system under test and judges
// them: it starts the target (the reference service with one mutant, or a
// user's service behind the harness's proxies), generates a plan from the
// scenario and a seed, makes the faults happen while the driver sends the
// plan's traffic, reads the effects, records everything as a history and
// checks the invariants.
//
// The exported API:
//
//   - [Test], [Case], [Step], [TB], [EnvSpec] with [LocalEnv] and
//     [ExternalEnv]: the Terraform-style Go API for tests.
//   - [Open] and [OpenOptions]: start the environment a set of scenarios
//     needs and get a [Runner] for it.
//   - [Runner.Run] with [RunOptions]: run one scenario, returning an
//     [Outcome] of [StepOutcome]s; [CorrectService] forces the correct
//     reference; [ErrSetup] marks errors that stopped a run before it could
//     judge anything.
//   - [Plan], [TimedFault] and [Plans]: the generated workload of a seed;
//     [Runner.Shrink] with [ShrinkBudget] and [ShrinkResult] minimises a
//     failing one.
//   - [Runner.CatchMatrix] with [MatrixOptions]: the suite against the
//     correct reference and every mutant ([Matrix], [MatrixRow]).
//   - [MaybeChild]: lets a binary serve as the reference's child processes.
//
// Sub-packages hold the parts: driver (traffic), oracle (effects), report
// (text, JSON, JUnit, HTML), bench (the evidence), and the environments:
// env, pgcluster, pgtest, proxy, proc and runenv.
package harness

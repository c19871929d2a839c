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
//     [ExternalEnv]: the Terraform-style Go API for tests. A step that fails
//     with a violation is classified and shrunk like a failing run
//     ([Case.Investigate], [Case.NoInvestigate]).
//   - [Open] and [OpenOptions] ([EnvKind] with [EnvAuto], [EnvLocal],
//     [EnvExternal], [EnvDocker]; [ParseEnvKind]): start the
//     environment a set of scenarios needs and get a [Runner] for it;
//     [Runner.Kind], [Runner.DatabaseProxyAddr]. The local and external
//     environments are always there; the docker one is linked in by
//     importing github.com/idemchaos/idemchaos/harness/docker, which
//     registers it, so a program that does not links no Docker SDK.
//     Every address goes through one address gate, loopback unless
//     [OpenOptions.AllowRemote] (the command line's --allow-remote;
//     [Case.AllowRemote] in Go), names looked up in
//     [OpenOptions.HostsFile] first: [CheckRemote] and
//     [ErrRemoteNotAllowed] refuse a scenario whose target.allow_remote
//     demands it.
//   - [Runner.Run] with [RunOptions]: run one scenario, returning an
//     [Outcome] of [StepOutcome]s; [CorrectService] forces the correct
//     reference; [ErrSetup] marks errors that stopped a run before it
//     could judge anything; [ReplayCommand] and [Invocation] say how to
//     run it again; [ScenarioOracle] reads a scenario's effects through
//     the gate.
//   - [Runner.Investigate] with [InvestigateOptions]: the follow-up of a
//     failure — re-runs of the same plan to classify it ([Investigation]),
//     then [Runner.Shrink] with [ShrinkBudget] ([ShrinkResult]).
//   - [Plan], [TimedFault] and [Plans]: the generated workload of a seed;
//     [SavePlan] keeps one, [StepFaultIDs] names what it may aim.
//   - the catch matrix (the suite against the correct reference and
//     every mutant) is the package harness/catchmatrix's.
//   - [MaybeChild]: lets a binary serve as the reference's child processes.
//
// Sub-packages hold the parts: driver (traffic) and oracle (effects),
// docker (the docker environment, registered on import), and pgtest (a
// throwaway Postgres for a user's tests). The infrastructure (environments,
// Postgres clusters, processes, proxies) is under internal/; see
// ARCHITECTURE.md.
package harness

// Package bench produces the evidence DESIGN §10 is measured against, in one
// run on the embedded environment: detection power (every mutant × many
// seeds), false alarms (the correct reference × many seeds of storm),
// harness speed (the driver against wrk, the proxy hop, the checkers against
// the decoder, the reference against pgbench, environment start-up, the
// brokers' start-up and the consumer path against the broker's own client,
// the client proxy against Toxiproxy, the whole demo), written as one Markdown report with the machine it ran on.
// `idemchaos bench` runs it; `idemchaos bench --quick` and the package's
// own test run the short gate CI needs.
//
// Timings are the median of several runs with their min and max. Sections
// run in a fixed order, each alone if asked, each bounded in time; a
// section that fails or runs out of time is reported as such and the
// others still run.
//
// The exported API:
//
//   - [Options], [Run], [Quick]: run the sections; [Quick] fails with
//     [ErrGate] when a mutant escaped or the reference was not clean.
//   - [Sections] and the Section* constants: the section names.
//   - [Report], with [Machine] and [SectionRun], and one result per section:
//     [DetectionResult] ([MutantDetection], [Escape]), [FalseAlarmResult]
//     ([RunVerdict] and the Verdict* constants; [StormScenario]),
//     [DriverResult], [CheckerResult] ([CheckerSize]), [ReferenceResult],
//     [StartupResult], [ConsumersResult], [ClientsResult], [DemoResult];
//     [Report.Markdown], [Report.Gate].
//   - [MaybeConsumer]: the consumers section's consumer, a copy of the
//     program (its main calls it first).
//   - [Summary] and [Summarize]: the median, p90, min and max of a sample.
//   - [ErrGate], [ErrUnknownSection].
package bench

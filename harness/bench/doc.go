// Package bench produces the evidence DESIGN §10 is measured against, in one
// run on the embedded environment: detection power (every mutant × many
// seeds), false alarms (the correct reference × many seeds of storm),
// harness speed (the driver against wrk, the proxy hop, the checkers against
// the decoder, the reference against pgbench, environment start-up, the
// whole demo), written as one Markdown report with the machine it ran on.
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
//   - [Report] and its sections ([DetectionResult], [FalseAlarmResult],
//     [DriverResult], [CheckerResult], [ReferenceResult], [StartupResult],
//     [DemoResult]); [Report.Markdown], [Report.Gate].
//   - [Sections], [Summary] and [Summarize]: section names, and the
//     median/p90/min/max of a sample.
//   - [ErrGate], [ErrUnknownSection].
package bench

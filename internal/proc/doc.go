// Package proc supervises child processes: the reference service and any
// helper the harness starts. A [Process] captures its output to a log file,
// is ready only when a [Ready] check says so, and can be killed for real
// (SIGKILL, the crash fault), restarted, or stopped gracefully (SIGTERM,
// then SIGKILL after a grace).
//
// Every child runs in its own process group (a terminal's Ctrl-C reaches the
// harness, which then stops children in order; a kill reaches the child's own
// children) and carries a parent-death signal, so it dies with the harness
// even when the harness itself is SIGKILLed.
//
// Exported API:
//
//   - [Start], [Spec], [Process]: [Process.PID], [Process.Kill],
//     [Process.Restart], [Process.Stop], [Process.Exited], [Process.Err],
//     [Process.LogPath], [Process.WaitUp] (down while a restart is coming).
//   - [Ready], [HTTPReady], [LineReady], [FuncReady]: readiness checks.
//   - [ErrExited], [ErrNotRunning], [ErrReadyTimeout].
package proc

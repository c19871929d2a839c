// Package runenv owns the run directory: the one place on disk where a run of
// idemchaos keeps everything it creates (Postgres data directories, logs,
// sockets), so that everything can be found again and removed.
//
// A run directory lives under a per-user base ([ChooseBase]: $IDEMCHAOS_RUNDIR
// when set, /dev/shm when it is writable with room to spare, the system temp
// directory otherwise) and carries a marker file
// that is also an advisory lock (flock) held for the life of the run. Because
// the kernel drops the lock when the owning process dies, however it dies, a
// directory whose lock can be taken belongs to a dead run. [Open] reaps such
// directories before it creates a new one: it kills any Postgres server still
// running from them (found through postmaster.pid), removes the System V
// shared memory segment a killed server leaves, and deletes the directory.
// The reaper never touches a directory without the marker.
//
// Exported API:
//
//   - [Open], [Options], [Run]: create a run directory; [Run.Dir],
//     [Run.NewDir], [Run.OnClose], [Run.Close].
//   - [Run.CloseOnSignal]: on SIGINT, SIGTERM or SIGHUP,
//     close the run and then die of the same signal.
//   - [Run.Hold]: a child process (and its children) keeps the run from
//     being reaped while it lives.
//   - [Shared], [CloseShared]: one lazily opened run per process, for test
//     helpers that need a place to put things.
//   - [ChooseBase], [DefaultBase], [DiskBase], [Bases], [EnvRunDir],
//     [ShmMinFree]: where runs go ([Options.Disk]: runs of large files
//     never go to /dev/shm).
//   - [Reap], [ReapAll], [MarkerName]: the stale-run reaper;
//     [KillServers] for one tree.
//   - [ErrClosed].
package runenv

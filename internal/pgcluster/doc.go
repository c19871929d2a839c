// Package pgcluster starts throwaway PostgreSQL clusters from the Postgres
// binaries installed on this machine: a primary tuned for tests and, on
// demand, streaming hot standbys with a real, adjustable
// recovery_min_apply_delay (the replica-lag fault).
//
// Every cluster lives in a directory of a [runenv.Run] (by default the
// process's shared run), so a killed harness leaves nothing that the next
// start cannot reap. The first cluster of a run pays for initdb into a
// template data directory; every later cluster is a copy of it.
//
// When the process runs as root, initdb, postgres and pg_basebackup run as
// the "postgres" OS user (Postgres refuses to run as root), and every
// directory they write is owned by that user.
//
// Exported API:
//
//   - [Start], [Config], [Cluster]: a primary; [Cluster.DSN],
//     [Cluster.Port], [Cluster.CreateDatabase], [Cluster.DropDatabase],
//     [Cluster.DataDir], [Cluster.PID], [Cluster.Close].
//   - [Cluster.StartStandby], [Standby]: a hot standby; [Standby.DSN],
//     [Standby.SetApplyDelay], [Standby.Close]; [ApplyDelay] on any
//     standby's connection (the docker environment's too).
//   - [FindBinDir]: where the Postgres server binaries are.
//   - [ErrNoBinaries], [ErrClosed], [ErrExited], [ErrNoServerUser],
//     [ErrSocketPathTooLong], [ErrNotTraversable].
package pgcluster

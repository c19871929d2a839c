package pgcluster

import "errors"

// ErrNoBinaries means no Postgres server binaries (initdb, postgres) were
// found on PATH, via pg_config --bindir, or under /usr/lib/postgresql.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found (install e.g. apt-get install postgresql-15, or point at them with the bin dir setting)")

// ErrClosed is returned when a closed cluster or standby is used.
var ErrClosed = errors.New("cluster closed")

// ErrExited means the server process exited before it became ready; the
// wrapped message quotes the tail of its log.
var ErrExited = errors.New("postgres exited before it was ready")

// ErrSocketPathTooLong means the cluster directory is so deep that the
// server's Unix socket path would pass the kernel's ~107 byte limit; use a
// shorter run base.
var ErrSocketPathTooLong = errors.New("unix socket path too long")

// ErrNotTraversable means the run directory sits below a directory the
// postgres OS user cannot enter (only when running as root).
var ErrNotTraversable = errors.New("run directory not reachable by the server user")

// ErrNoServerUser means the process runs as root and there is no "postgres"
// OS user to run the server as.
var ErrNoServerUser = errors.New(`running as root needs a "postgres" OS user to run the server as`)

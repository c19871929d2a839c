package mariadb

import "errors"

// ErrNoBinaries means mariadb-install-db or mariadbd was not found on PATH
// or in /usr/sbin and /usr/bin.
var ErrNoBinaries = errors.New("no MariaDB server binaries found (install them: apt-get install mariadb-server)")

// ErrExited means the server exited before it accepted connections; the
// wrapped message quotes the tail of its error log.
var ErrExited = errors.New("mariadbd exited before it was ready")

// ErrNoServerUser means the process runs as root and there is no "mysql"
// OS user to run the server as.
var ErrNoServerUser = errors.New(`running as root needs a "mysql" OS user to run the server as (apt-get install mariadb-server creates it)`)

// ErrClosed is returned when a closed server is used.
var ErrClosed = errors.New("mariadb server closed")

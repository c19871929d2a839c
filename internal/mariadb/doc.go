// Package mariadb starts throwaway MariaDB servers from the MariaDB binaries
// installed on this machine (Debian's mariadb-server: mariadb-install-db
// and mariadbd), for the tests of the sql oracle's MySQL driver and the
// foreign corpus's MariaDB service: a real server, never a stand-in.
//
// Every server lives in a directory of a [runenv.Run] (by default the
// process's shared run) and registers its Close with it, so closing the
// run stops it; the server is also started with a parent-death signal, so
// it dies with the process that started it however that process dies.
// When the process runs as root, mariadb-install-db and mariadbd run as
// the "mysql" OS user, the way the Debian package runs the server.
//
// The server listens on 127.0.0.1 on a free port and lets root in without
// a password (mariadb-install-db --auth-root-authentication-method=normal):
// it holds nothing but test data and no other address reaches it.
//
// Exported API:
//
//   - [Start], [Config], [Server]: a server; [Server.Addr], [Server.DSN],
//     [Server.DriverDSN], [Server.CreateDatabase], [Server.DropDatabase],
//     [Server.PID], [Server.Close].
//   - [FindBinaries]: where mariadb-install-db and mariadbd are.
//   - [ErrNoBinaries], [ErrExited], [ErrNoServerUser], [ErrClosed].
package mariadb

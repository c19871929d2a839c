// Package mariadbtest gives tests a real MariaDB cheaply: one shared server
// per test binary ([Server]) and a fresh, dropped-afterwards database per
// test ([Database]), the way [github.com/idemchaos/idemchaos/harness/pgtest]
// gives Postgres. The server comes from Debian's mariadb-server binaries
// (mariadb-install-db into a temporary directory, mariadbd on a free
// loopback port, as the "mysql" user when the tests run as root); a test
// fails, never skips, when they are missing.
//
//	func TestMain(m *testing.M) { mariadbtest.Main(m) }
//
//	func TestOrders_Create(t *testing.T) {
//		db := mariadbtest.Database(t)
//		// db.URL for a scenario's effects.dsn, db.DSN for database/sql
//		...
//	}
//
// [Main] stops the shared server when the tests end (it is pgtest.Main:
// both servers close with the process's run directory); without it, the
// server dies with the test binary (parent-death signal).
//
// Exported API: [Main], [Server], [Database], [DB].
package mariadbtest

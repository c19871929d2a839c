// Package pgtest gives tests a real Postgres cheaply: one shared primary per
// test binary ([Primary]) and a fresh, dropped-afterwards database per test
// ([Database]).
//
// Use it from a test package like this:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestOrders_Create(t *testing.T) {
//		dsn := pgtest.Database(t)
//		...
//	}
//
// [Main] stops the shared cluster and removes its run directory when the
// tests end, and on SIGINT/SIGTERM/SIGHUP. Without Main the server still dies with
// the test binary (it is started with a parent-death signal) and the next
// run's reaper removes the directory.
//
// Exported API: [Main], [Primary], [Database], [Standby].
package pgtest

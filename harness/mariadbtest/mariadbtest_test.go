package mariadbtest_test

import (
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/idemchaos/idemchaos/harness/mariadbtest"
	"github.com/idemchaos/idemchaos/internal/proctest"
)

func TestMain(m *testing.M) { mariadbtest.Main(m) }

// TestDatabase_RealServerFreshAndDropped writes to a fresh database of the
// shared server over TCP and checks that the cleanup drops it, and that
// closing the server ends its process.
func TestDatabase_RealServerFreshAndDropped(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		db := mariadbtest.Database(t)
		name = db.Name
		conn, err := sql.Open("mysql", db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var n int
		if err := conn.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("fresh database has %d tables", n)
		}
		if _, err := conn.Exec("CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		var version string
		if err := conn.QueryRow("SELECT VERSION()").Scan(&version); err != nil {
			t.Fatal(err)
		}
		t.Logf("server %s", version)
	})
	s := mariadbtest.Server(t)
	conn, err := sql.Open("mysql", s.DriverDSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = conn.QueryRow("SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n)
	_ = conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s survived its test's cleanup", name)
	}
	pid := s.PID()
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	proctest.WaitGone(t, pid, 10*time.Second, "mariadbd survived Close")
}

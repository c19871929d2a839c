package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// The sql oracle's MySQL and SQLite drivers live in packages of their own
// (harness/oracle/mysql, harness/oracle/sqlite) that register themselves:
// the command links them, a user's test that imports harness does not.
// So do the brokers: the embedded NATS server (harness/broker/nats),
// RabbitMQ's client (harness/broker/rabbitmq) and Redis's
// (harness/broker/redis).
func TestDeps_HarnessLinksNoMySQLOrSQLite(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", module+"/harness").Output()
	if err != nil {
		t.Fatalf("go list -deps harness: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, driver := range []string{"github.com/go-sql-driver/mysql", "modernc.org/", module + "/harness/oracle/mysql", module + "/harness/oracle/sqlite",
			"github.com/nats-io/", module + "/harness/broker/nats", "github.com/rabbitmq/", module + "/harness/broker/rabbitmq", "github.com/redis/", module + "/harness/broker/redis"} {
			if strings.HasPrefix(dep, driver) {
				t.Errorf("harness links %s: a MySQL or SQLite driver, or a broker, belongs to its registering package, which only the command (or a test that wants it) imports", dep)
			}
		}
	}
	cmd, err := exec.Command("go", "list", "-deps", module+"/cmd/idemchaos").Output()
	if err != nil {
		t.Fatalf("go list -deps cmd/idemchaos: %v", err)
	}
	for _, want := range []string{module + "/harness/oracle/mysql", module + "/harness/oracle/sqlite", module + "/harness/broker/nats", module + "/harness/broker/rabbitmq", module + "/harness/broker/redis"} {
		if !strings.Contains(string(cmd), want+"\n") {
			t.Errorf("the command does not link %s: its DSNs (or broker kind) would not validate", want)
		}
	}
}

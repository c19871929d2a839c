package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/idemchaos/idemchaos/harness/mariadbtest"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/harness/oracle/mysql"
)

func TestMain(m *testing.M) { mariadbtest.Main(m) }

func TestConfig_TranslatesTheURL(t *testing.T) {
	t.Parallel()
	c, err := mysql.Config("mysql://app:p%40ss%3Aword@db.local/orders?tls=false&timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "app" || c.Passwd != "p@ss:word" || c.Net != "tcp" || c.Addr != "db.local:3306" || c.DBName != "orders" || c.Timeout != 3*time.Second {
		t.Errorf("got user %q passwd %q %s %s db %q timeout %s", c.User, c.Passwd, c.Net, c.Addr, c.DBName, c.Timeout)
	}
	c, err = mysql.Config("mysql://root@[::1]:3307/x")
	if err != nil || c.Addr != "[::1]:3307" || c.Passwd != "" || c.Timeout != 10*time.Second {
		t.Errorf("got %+v, %v", c, err)
	}
	for dsn, want := range map[string]string{
		"mysql:///orders":                 "want mysql://user:password@host:port/database",
		"mysql://root@h/a/b":              "one path segment",
		"mysql://root@h/db?timeout=never": "timeout",
	} {
		if _, err := mysql.Config(dsn); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error mentioning %q", dsn, err, want)
		}
	}
}

func TestEndpoints_NameTheHost(t *testing.T) {
	t.Parallel()
	name, eps, err := oracle.DSNEndpoints("mysql://u@10.1.2.3/db")
	if err != nil || name != "mysql" || len(eps) != 1 || eps[0] != (oracle.Endpoint{Network: "tcp", Addr: "10.1.2.3:3306"}) {
		t.Fatalf("got %s %v %v", name, eps, err)
	}
}

// TestSQL_ReadsARealMariaDB writes orders with the server's own client
// protocol and reads them back through the sql oracle's mysql:// form.
func TestSQL_ReadsARealMariaDB(t *testing.T) {
	t.Parallel()
	db := mariadbtest.Database(t)
	conn, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, merchant VARCHAR(64), idem_key VARCHAR(255), kind VARCHAR(16))",
		"INSERT INTO orders (merchant, idem_key, kind) VALUES ('m1','k1','order'), ('m1','k1','order'), ('m2','k9', NULL)",
	} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fx, err := oracle.SQL(db.URL, "SELECT merchant, idem_key, id, kind FROM orders").Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range fx {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s", e.Tenant, e.Key, e.Kind, e.ID))
	}
	sort.Strings(got)
	if want := "m1/k1/order/1 m1/k1/order/2 m2/k9/effect/3"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	u, _ := url.Parse(db.URL)
	for name, o := range map[string]oracle.Oracle{
		"bad query":    oracle.SQL(db.URL, "SELECT nope FROM nowhere"),
		"two columns":  oracle.SQL(db.URL, "SELECT 'a', 'b'"),
		"no database":  oracle.SQL("mysql://root@"+u.Host+"/no_such_db", "SELECT 1, 2, 3"),
		"wrong server": oracle.SQL("mysql://root@127.0.0.1:1/x?timeout=2s", "SELECT 1, 2, 3"),
	} {
		if _, err := o.Effects(context.Background()); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

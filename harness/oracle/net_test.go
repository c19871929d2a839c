package oracle_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// dials records what an oracle dialled, through the loopback gate.
type dials struct {
	addrgate.Way
	mu   sync.Mutex
	seen []string
}

func (d *dials) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.seen = append(d.seen, addr)
	d.mu.Unlock()
	return d.Way.DialContext(ctx, network, addr)
}

// Every form of Postgres DSN is checked host by host before the first
// connection: a URL, a multi-host URL, key=value, multi-host key=value, and
// a name that would need DNS. Not one dial is made (the first host of the
// multi-host ones is a closed loopback port, which pgconn would try and
// then fall back from).
func TestSQL_RefusesEveryHostOffTheMachine(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u@203.0.113.9:5432/db",
		"postgresql://u@127.0.0.1:1,203.0.113.9:5432/db?connect_timeout=1",
		"host=203.0.113.9 dbname=db",
		"host=127.0.0.1,203.0.113.9 port=1,5432 dbname=db connect_timeout=1",
		"host=db.example.com dbname=db",
		"postgres://u@db.example.com./db",
		"postgres://u@[::ffff:203.0.113.9]:5432/db",
	} {
		d := &dials{Way: addrgate.Loopback().For("effects.dsn")}
		_, err := oracle.SQL(dsn, "SELECT 1", oracle.Through(d)).Effects(context.Background())
		if !errors.Is(err, addrgate.ErrNotLoopback) || !errors.Is(err, oracle.ErrOracle) || !strings.Contains(err.Error(), "effects.dsn") {
			t.Errorf("%s: %v, want a refusal naming effects.dsn", dsn, err)
		}
		if len(d.seen) > 0 {
			t.Errorf("%s: dialled %v before refusing", dsn, d.seen)
		}
	}
}

// The default way out is the loopback gate: without Through, a remote DSN
// is refused just the same.
func TestSQL_LoopbackByDefault(t *testing.T) {
	t.Parallel()
	_, err := oracle.SQL("postgres://u@203.0.113.9:5432/db", "SELECT 1").Effects(context.Background())
	if !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Fatalf("%v", err)
	}
}

// A real database on loopback is read through the gate, and its
// connection is dialled through it.
func TestSQL_ReadsThroughTheGate(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	d := &dials{Way: addrgate.Loopback().For("effects.dsn")}
	fx, err := oracle.SQL(dsn, `SELECT 't1', 'k1', 'order 1'`, oracle.Through(d)).Effects(context.Background())
	if err != nil || len(fx) != 1 {
		t.Fatalf("%v %v", fx, err)
	}
	if len(d.seen) == 0 {
		t.Fatal("the connection did not go through the gate")
	}
}

// The gate lists the hosts of every form pgconn reads.
func TestPostgresDSNForms(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u@127.0.0.1:5432/db?sslmode=disable":              "tcp 127.0.0.1:5432",
		"postgresql://u@127.0.0.1:5432,[::1]:5433/db?sslmode=disable": "tcp 127.0.0.1:5432, tcp [::1]:5433",
		"host=localhost,db.test port=5432,6432 sslmode=disable":       "tcp localhost:5432, tcp db.test:6432",
		"host=/var/run/postgresql dbname=x sslmode=disable":           "unix /var/run/postgresql",
	} {
		form, eps, err := addrgate.Endpoints(dsn)
		var got []string
		for _, ep := range eps {
			got = append(got, ep.Network+" "+ep.Addr)
		}
		if err != nil || form != "postgres" || strings.Join(got, ", ") != want {
			t.Errorf("%s: %s %v %v, want %s", dsn, form, got, err, want)
		}
	}
}

// Every redirect hop of the http oracle goes through the gate: a 302 to
// another machine is refused, not followed.
func TestHTTP_RedirectOffTheMachineRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.1:9/effects", http.StatusFound)
	}))
	defer srv.Close()
	_, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL + "/effects", Items: "$[*]", Tenant: "$.t", Key: "$.k", ID: "$.id"}).Effects(context.Background())
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "effects.url (redirected to http://192.0.2.1:9/effects)") {
		t.Fatalf("%v", err)
	}
}

package oracle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/reference"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func exec(t *testing.T, dsn string, sqls ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range sqls {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func ids(fx []history.Effect) string {
	var out []string
	for _, e := range fx {
		out = append(out, fmt.Sprintf("%s/%s/%s/%s", e.Tenant, e.Key, e.Kind, e.ID))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestSQL_ReadsTenantKeyAndID(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	exec(t, dsn, `CREATE TABLE shipments (tenant text, idem text, id int)`,
		`INSERT INTO shipments VALUES ('t1','k1',7), ('t1','k1',8), ('t2','k9',9)`)
	fx, err := oracle.SQL(dsn, `SELECT tenant, idem, 'shipment ' || id FROM shipments`).Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(fx); got != "t1/k1/shipment/shipment 7 t1/k1/shipment/shipment 8 t2/k9/shipment/shipment 9" {
		t.Fatalf("got %s", got)
	}
}

func TestSQL_ErrorsAreOracleErrors(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	cases := map[string]oracle.Oracle{
		"bad query":   oracle.SQL(dsn, `SELECT nope FROM nowhere`),
		"two columns": oracle.SQL(dsn, `SELECT 'a', 'b'`),
		"bad dsn":     oracle.SQL("postgres://nobody@127.0.0.1:1/none?connect_timeout=2", `SELECT 1`),
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := o.Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
				t.Fatalf("got %v, want ErrOracle", err)
			}
		})
	}
}

func TestHTTP_PicksFieldsByPath(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":{"effects":[{"tenant":"t1","meta":{"key":"k1"},"id":"order 5"},{"tenant":"t2","meta":{"key":"k2"},"id":6}]}}`)
	}))
	defer srv.Close()
	fx, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: "$.data.effects[*]", Tenant: "$.tenant", Key: "$.meta.key", ID: "$.id"}).Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(fx); got != "t1/k1/order/order 5 t2/k2/effect/6" {
		t.Fatalf("got %s", got)
	}
	if _, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: "$.data.nope[*]", Tenant: "$.tenant", Key: "", ID: "$.id"}).Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
		t.Fatalf("a missing items path: %v", err)
	}
}

func TestReference_ReadsOrdersAndWaitsForTheQueue(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	if err := reference.Migrate(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	exec(t, dsn,
		`INSERT INTO orders (id, tenant, idem_key, intent, sku, qty, amount) VALUES ('o1','t1','k1','i1','A',1,100)`,
		`INSERT INTO outbox_events (tenant, aggregate_id, event_type, payload, acked_at) VALUES ('t1','o1','order.created','{}', now())`)
	start := time.Now()
	fx, err := oracle.Reference(dsn, 5*time.Second).Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(fx); got != "t1/k1/order/order o1" || fx[0].Intent != "i1" {
		t.Fatalf("got %s (intent %q)", got, fx[0].Intent)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("a drained outbox should not be waited for (%s)", time.Since(start))
	}
}

// states renders each effect's resource, state and when it was written.
func states(fx []history.Effect) string {
	var out []string
	for _, e := range fx {
		out = append(out, fmt.Sprintf("%s=%s@%s", e.Resource, e.State, e.WrittenAt.UTC().Format(time.RFC3339Nano)))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The state, when it was written and the resource are named columns,
// wherever they stand; the positional four stay tenant, key, id, kind.
func TestSQL_ReadsStateAndWrittenAtByName(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	exec(t, dsn, `CREATE TABLE payments (id text, status text, updated_at timestamptz, last_event text)`,
		`INSERT INTO payments VALUES ('pay_1', 'paid', '2026-12-02 07:00:01.25+00', 'evt_2'), ('pay_2', 'created', '2026-12-02 07:00:02+00', 'evt_3')`)
	fx, err := oracle.SQL(dsn, `SELECT status AS state, 'provider', last_event, 'payment ' || id, updated_at AS written_at, 'payment', id AS resource FROM payments`).Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(fx); got != "provider/evt_2/payment/payment pay_1 provider/evt_3/payment/payment pay_2" {
		t.Fatalf("positional columns: %s", got)
	}
	if got, want := states(fx), "pay_1=paid@2026-12-02T07:00:01.25Z pay_2=created@2026-12-02T07:00:02Z"; got != want {
		t.Fatalf("named columns: %s, want %s", got, want)
	}
	if _, err := oracle.SQL(dsn, `SELECT 'provider', 'k', 'payment 1', 'paid' AS state, 'yesterday' AS written_at`).Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) || !strings.Contains(err.Error(), "written_at") {
		t.Fatalf("a written_at that is no time: %v", err)
	}
}

func TestHTTP_ReadsStateAndWrittenAtByPath(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"event":"evt_1","payment":"pay_1","status":"paid","at":"2026-12-02T07:00:01.5Z"},{"event":"evt_2","payment":"pay_1","status":"created","at":1796194803.25}]`)
	}))
	defer srv.Close()
	fx, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: "$[*]", Tenant: "$.payment", Key: "$.event", ID: "$.event",
		State: "$.status", WrittenAt: "$.at", Resource: "$.payment"}).Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := states(fx), "pay_1=created@2026-12-02T07:00:03.25Z pay_1=paid@2026-12-02T07:00:01.5Z"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

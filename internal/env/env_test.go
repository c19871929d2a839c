package env_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// envService turns the test binary into a tiny HTTP service on $PORT.
const envService = "IDEMCHAOS_ENV_SERVICE"

func TestMain(m *testing.M) {
	if os.Getenv(envService) != "" {
		l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			os.Exit(1)
		}
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
		os.Exit(0)
	}
	pgtest.Main(m)
}

// closedPort returns a loopback address nobody listens on.
func closedPort(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// get fetches url and returns the body.
func get(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStartLocal_WithoutBinariesSaysWhatToInstall(t *testing.T) {
	// Not parallel: swaps the package's binary lookup.
	restore := env.SetFindBinDir(func(context.Context) (string, error) { return "", errors.New("none") })
	defer restore()
	_, err := env.StartLocal(context.Background(), env.LocalConfig{})
	if !errors.Is(err, env.ErrNoEnvironment) {
		t.Fatalf("StartLocal: %v, want ErrNoEnvironment", err)
	}
	for _, want := range []string{"apt-get install postgresql-15", "--env external --target"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestStartExternal_RefusesNonLoopbackTarget(t *testing.T) {
	t.Parallel()
	_, err := env.StartExternal(context.Background(), env.ExternalConfig{ServiceURL: "http://10.0.0.5:8080/v1"})
	var nl *addrgate.NotLoopbackError
	if !errors.As(err, &nl) || nl.Addr != "10.0.0.5:8080" {
		t.Fatalf("StartExternal: %v, want NotLoopbackError for 10.0.0.5:8080", err)
	}
	if !strings.Contains(err.Error(), "--target 10.0.0.5:8080 is not a loopback address; pass --allow-remote to send traffic there") {
		t.Fatalf("message: %v", err)
	}
	_, err = env.StartExternal(context.Background(), env.ExternalConfig{ServiceURL: "http://127.0.0.1:8080", DatabaseAddr: "10.0.0.6:5432"})
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--db-addr 10.0.0.6:5432") {
		t.Fatalf("remote database address: %v, want ErrNotLoopback naming --db-addr", err)
	}
}

func TestStartExternal_UnreachableTargetWithin5s(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]env.ExternalConfig{
		"refused":    {ServiceURL: "http://" + closedPort(t)},
		"no-route":   {ServiceURL: "http://192.0.2.1:9", Gate: addrgate.New(addrgate.Config{AllowRemote: true})}, // TEST-NET-1: never answers
		"db-refused": {ServiceURL: "http://" + startService(t), DatabaseAddr: closedPort(t)},
		"blackhole":  {ServiceURL: "http://" + blackhole(t)}, // SYNs dropped: only the 5s deadline ends the dial
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := env.StartExternal(context.Background(), cfg)
			elapsed := time.Since(start)
			var ue *env.UnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("StartExternal: %v, want UnreachableError", err)
			}
			t.Logf("after %v: %v", elapsed, err)
			if elapsed > 5*time.Second+500*time.Millisecond {
				t.Fatalf("reported after %v, want within 5s", elapsed)
			}
		})
	}
}

// blackhole returns a loopback address that never completes a TCP
// handshake: a listener with a zero backlog that never accepts, its queue
// already filled, so the kernel drops further SYNs.
func blackhole(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = filler.Close() })
	return addr
}

// startService starts an httptest server and returns its host:port.
func startService(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello "+r.URL.Path) }))
	tb.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestExternal_ProxiesServiceAndDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Database(t)
	e, err := env.StartExternal(ctx, env.ExternalConfig{
		ServiceURL: "http://" + startService(t) + "/base", DSN: dsn, DatabaseAddr: pgtest.Primary(t).Addr()})
	if err != nil {
		t.Fatalf("StartExternal: %v", err)
	}
	defer e.Close(ctx)
	if e.ServiceURL() == e.TargetURL() || !strings.HasSuffix(e.ServiceURL(), "/base") {
		t.Fatalf("service URL %q (target %q)", e.ServiceURL(), e.TargetURL())
	}
	if got := get(t, e.ServiceURL()); got != "hello /base" {
		t.Fatalf("through the service proxy: %q", got)
	}
	if err := e.Proxies().AddToxic(ctx, env.ServiceProxy, proxy.Toxic{Type: "limit_data", Attributes: map[string]any{"bytes": 0}}); err != nil {
		t.Fatalf("AddToxic: %v", err)
	}
	if _, err := http.Get(e.ServiceURL()); err == nil {
		t.Fatal("response arrived through a limit_data=0 toxic")
	}

	// The service's database connection, through the database proxy.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(e.DatabaseProxyAddr())
	cfg.Host = host
	p, _ := strconv.Atoi(port)
	cfg.Port = uint16(p)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect through database proxy: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through database proxy: %d, %v", one, err)
	}
}

func TestLocal_StartsEverythingAndCleansUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := env.StartLocal(ctx, env.LocalConfig{Standby: true, ApplyDelay: time.Second})
	if err != nil {
		t.Fatalf("StartLocal: %v", err)
	}
	t.Cleanup(func() { _ = l.Close(ctx) })
	if l.Standby() == nil {
		t.Fatal("no standby")
	}
	var inRecovery bool
	conn, err := pgx.Connect(ctx, l.Standby().DSN())
	if err != nil {
		t.Fatalf("connect standby: %v", err)
	}
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
	_ = conn.Close(ctx)
	if err != nil || !inRecovery {
		t.Fatalf("standby in recovery = %t, %v", inRecovery, err)
	}

	viaProxy, err := l.ProxiedDSN(l.Primary().DSN())
	if err != nil {
		t.Fatalf("ProxiedDSN: %v", err)
	}
	if !strings.Contains(viaProxy, l.DatabaseProxyAddr()) {
		t.Fatalf("proxied DSN %q does not use %s", viaProxy, l.DatabaseProxyAddr())
	}
	conn, err = pgx.Connect(ctx, viaProxy)
	if err != nil {
		t.Fatalf("connect through the db proxy: %v", err)
	}
	_ = conn.Close(ctx)

	port := strings.TrimPrefix(closedPort(t), "127.0.0.1:")
	p, err := l.StartProcess(ctx, proc.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{envService + "=1", "PORT=" + port}, Ready: proc.HTTPReady("http://127.0.0.1:" + port + "/")})
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	listen, err := l.Proxies().CreateProxy(ctx, "ref", "", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("CreateProxy: %v", err)
	}
	if got := get(t, "http://"+listen+"/"); got != "ok" {
		t.Fatalf("service through proxy: %q", got)
	}

	runDir := l.Run().Dir()
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("service still running after Close")
	}
	if _, err := os.Stat(runDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run dir survived Close: %v", err)
	}
	if _, err := pgx.Connect(ctx, l.Primary().DSN()); err == nil {
		t.Fatal("primary still up after Close")
	}
}

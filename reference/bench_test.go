package reference_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// Shape of the benchmark: every workload alternates service and pgbench
// slices (benchRounds of benchSlice each), so load from anything else on
// the machine hits both sides alike.
const (
	benchConcurrency = 16
	benchSlice       = 2 * time.Second
	benchRounds      = 3
)

// BenchmarkService_VersusPgbench measures, against one throwaway cluster
// and in one run, the service's requests/s and p99 for new keys and for
// replays at concurrency 16, and pgbench running the same SQL per request
// (claim; debit + record + order + ledger + outbox in one transaction; for
// replays the one claim/lookup statement) as the yardstick. Phases run for
// a fixed time, so the benchmark runs once whatever b.N is:
//
//	go test ./reference/ -run '^$' -bench VersusPgbench -benchtime 1x
//
// The load generator is a minimal HTTP/1.1 client on kept-alive
// connections (wrk-style), so that, as with pgbench, the client's own cost
// stays small next to the server's.
func BenchmarkService_VersusPgbench(b *testing.B) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		pgbench = "/usr/bin/pgbench"
	}
	dsn := pgtest.Database(b)
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- reference.Serve(ctx, reference.Config{DSN: dsn, Addr: "127.0.0.1:0", MaxConns: benchConcurrency,
			Ready: func(a string) { ready <- a }}, io.Discard)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		b.Fatal(err)
	}
	defer func() { cancel(); <-done }()

	var keySeq atomic.Int64
	var mu sync.Mutex
	var known [][2]string // (token, key) created so far, for the replay phase
	newKey := func(int) (string, string) {
		n := keySeq.Add(1)
		tok, k := fmt.Sprintf("tok-t%d", n%3+1), fmt.Sprintf("bench-%d", n)
		mu.Lock()
		known = append(known, [2]string{tok, k})
		mu.Unlock()
		return tok, k
	}
	replayKey := func(int) (string, string) {
		mu.Lock()
		defer mu.Unlock()
		p := known[rand.IntN(len(known))]
		return p[0], p[1]
	}
	dir := b.TempDir()
	seedReplayRecords(b, dsn, 1000)
	newScript, replayScript := pgbenchNewScript(), pgbenchReplayScript()
	runPhase(b, addr, 500*time.Millisecond, newKey) // warm-up: connections, prepared statements

	var svcNew, svcReplay, pgNew, pgReplay phaseResult
	for round := range benchRounds {
		svcNew.add(runPhase(b, addr, benchSlice, newKey))
		pgNew.add(runPgbench(b, pgbench, dsn, dir, fmt.Sprintf("new%d", round), newScript))
	}
	// The structural ceiling of a replay, measured in the same rounds: an
	// HTTP round trip to a trivial handler, and the claim statement alone
	// through pgx; a replay needs both, one after the other.
	floorAddr, stopFloor := startHTTPFloor(b)
	defer stopFloor()
	var httpFloor, pgxFloor phaseResult
	for round := range benchRounds {
		svcReplay.add(runPhase(b, addr, benchSlice, replayKey))
		pgReplay.add(runPgbench(b, pgbench, dsn, dir, fmt.Sprintf("replay%d", round), replayScript))
		httpFloor.add(runPhase(b, floorAddr, benchSlice, replayKey))
		pgxFloor.add(runPgxFloor(b, dsn))
	}

	ceiling := 1 / (1/httpFloor.rate() + 1/pgxFloor.rate())
	b.ReportMetric(ceiling/pgReplay.rate(), "ceiling_ratio_replay")
	b.ReportMetric(svcNew.rate(), "svc_new_req/s")
	b.ReportMetric(svcReplay.rate(), "svc_replay_req/s")
	b.ReportMetric(pgNew.rate(), "pgbench_new_tps")
	b.ReportMetric(pgReplay.rate(), "pgbench_replay_tps")
	b.ReportMetric(svcNew.rate()/pgNew.rate(), "ratio_new")
	b.ReportMetric(svcReplay.rate()/pgReplay.rate(), "ratio_replay")
	b.ReportMetric(ms(svcNew.p99()), "svc_new_p99_ms")
	b.ReportMetric(ms(svcReplay.p99()), "svc_replay_p99_ms")
	b.ReportMetric(ms(pgNew.p99()), "pgbench_new_p99_ms")
	b.ReportMetric(ms(pgReplay.p99()), "pgbench_replay_p99_ms")
	b.Logf("\n%-22s %10s %10s %10s\n%-22s %10.0f %10.2f %10s\n%-22s %10.0f %10.2f %10.2f\n%-22s %10.0f %10.2f %10s\n%-22s %10.0f %10.2f %10.2f",
		"c=16", "per s", "p99 ms", "ratio",
		"pgbench new keys", pgNew.rate(), ms(pgNew.p99()), "",
		"service new keys", svcNew.rate(), ms(svcNew.p99()), svcNew.rate()/pgNew.rate(),
		"pgbench replays", pgReplay.rate(), ms(pgReplay.p99()), "",
		"service replays", svcReplay.rate(), ms(svcReplay.p99()), svcReplay.rate()/pgReplay.rate())
	b.Logf("replay ceiling: HTTP alone %.0f/s, claim via pgx alone %.0f/s, both in series %.0f/s = %.2f × pgbench",
		httpFloor.rate(), pgxFloor.rate(), ceiling, ceiling/pgReplay.rate())
	if svcNew.errors+svcReplay.errors > 0 {
		b.Errorf("%d failed requests", svcNew.errors+svcReplay.errors)
	}
}

// startHTTPFloor serves a handler that only writes a fixed 150-byte body.
func startHTTPFloor(b *testing.B) (string, func()) {
	b.Helper()
	body := []byte(strings.Repeat("x", 150))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }
}

// runPgxFloor runs the replay's one statement from benchConcurrency
// goroutines through a pgx pool configured like the service's.
func runPgxFloor(b *testing.B, dsn string) phaseResult {
	b.Helper()
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = benchConcurrency
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var wg sync.WaitGroup
	var n atomic.Int64
	deadline := time.Now().Add(benchSlice)
	start := time.Now()
	for w := range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				rows, err := pool.Query(context.Background(), reference.BenchSQL.Claim, "t1", "POST /v1/orders",
					"pgr-"+strconv.Itoa((w*61+i)%1000+1), strings.Repeat("f", 64), "tok", 30.0)
				if err != nil {
					b.Error(err)
					return
				}
				for rows.Next() {
				}
				rows.Close()
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return phaseResult{n: float64(n.Load()), elapsed: time.Since(start)}
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// phaseResult accumulates the slices of one workload.
type phaseResult struct {
	n       float64 // requests or transactions
	elapsed time.Duration
	lat     []time.Duration
	errors  int64
}

func (p *phaseResult) add(o phaseResult) {
	p.n += o.n
	p.elapsed += o.elapsed
	p.lat = append(p.lat, o.lat...)
	p.errors += o.errors
}

func (p *phaseResult) rate() float64      { return p.n / p.elapsed.Seconds() }
func (p *phaseResult) p99() time.Duration { return percentile(p.lat, 0.99) }

// runPhase posts orders from benchConcurrency workers for d, each on its
// own kept-alive connection; pick chooses each request's (token, key).
func runPhase(b *testing.B, addr string, d time.Duration, pick func(worker int) (string, string)) phaseResult {
	b.Helper()
	var wg sync.WaitGroup
	var errs atomic.Int64
	lat := make([][]time.Duration, benchConcurrency)
	deadline := time.Now().Add(d)
	start := time.Now()
	for w := range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				errs.Add(1)
				return
			}
			defer conn.Close()
			br := bufio.NewReaderSize(conn, 8192)
			buf := make([]byte, 0, 512)
			for time.Now().Before(deadline) {
				tok, key := pick(w)
				buf = append(buf[:0], "POST /v1/orders HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer "...)
				buf = append(buf, tok...)
				buf = append(buf, "\r\nIdempotency-Key: "...)
				buf = append(buf, key...)
				buf = append(buf, "\r\nContent-Type: application/json\r\nContent-Length: "...)
				buf = strconv.AppendInt(buf, int64(len(defaultBody)), 10)
				buf = append(buf, "\r\n\r\n"...)
				buf = append(buf, defaultBody...)
				t0 := time.Now()
				if _, err := conn.Write(buf); err != nil {
					errs.Add(1)
					return
				}
				status, err := readResponse(br)
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					errs.Add(1)
					return
				}
				if status != http.StatusCreated {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(lat...)
	return phaseResult{n: float64(len(all)), elapsed: time.Since(start), lat: all, errors: errs.Load()}
}

// readResponse reads one HTTP/1.1 response with a Content-Length body and
// returns its status.
func readResponse(br *bufio.Reader) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 {
		return 0, fmt.Errorf("short status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, err
	}
	length := 0
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if len(h) > 16 && strings.EqualFold(string(h[:15]), "Content-Length:") {
			length, _ = strconv.Atoi(strings.TrimSpace(string(h[15:])))
		}
	}
	_, err = br.Discard(length)
	return status, err
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// bind replaces $n placeholders (highest first, so $1 does not eat $10).
func bind(sql string, args ...string) string {
	for i := len(args); i >= 1; i-- {
		sql = strings.ReplaceAll(sql, "$"+strconv.Itoa(i), args[i-1])
	}
	return sql + ";\n"
}

// pgbenchNewScript is one new-key request: the claim, then the business
// transaction, with the service's own SQL text.
func pgbenchNewScript() string {
	sql := reference.BenchSQL
	tenant, key := `('t' || :tn)`, `('pgb-' || :client_id || '-' || :r)`
	order := `('ord_' || :client_id || '-' || :r)`
	body := `'\x` + strings.Repeat("7b", 150) + `'::bytea`
	var s strings.Builder
	s.WriteString("\\set r random(1, 9000000000000000000)\n\\set tn random(1, 3)\n")
	s.WriteString(bind(sql.Claim, tenant, `'POST /v1/orders'`, key, `'`+strings.Repeat("f", 64)+`'`, `'TOKENTOKENTOKENTOKENTOKEN2'`, `30`))
	s.WriteString("BEGIN;\n")
	s.WriteString(bind(sql.Debit, tenant, `500`))
	s.WriteString(bind(sql.Complete, tenant, `'POST /v1/orders'`, key, `'TOKENTOKENTOKENTOKENTOKEN2'`, `'succeeded'`, `201`,
		`'{"Content-Type":"application/json","Location":"/v1/orders/x"}'::jsonb`, body))
	s.WriteString(bind(sql.InsertOrder, order, tenant, key, `NULL`, `'A-100'`, `2`, `500`, `(`+tenant+` || 'POST /v1/orders' || `+key+`)`, `now()`))
	s.WriteString(bind(sql.InsertDebit, tenant, order, `500`, `('debit:' || `+order+`)`))
	s.WriteString(bind(sql.InsertOutbox, tenant, order, `'{"order_id":"x","tenant":"t1","idempotency_key":"k","amount":500}'`))
	s.WriteString("END;\n")
	return s.String()
}

// pgbenchReplayScript is one replay: the claim statement losing to an
// existing record and returning it.
func pgbenchReplayScript() string {
	return "\\set n random(1, 1000)\n" + bind(reference.BenchSQL.Claim, `'t1'`, `'POST /v1/orders'`, `('pgr-' || :n)`,
		`'`+strings.Repeat("f", 64)+`'`, `'TOKENTOKENTOKENTOKENTOKEN2'`, `30`)
}

func seedReplayRecords(b *testing.B, dsn string, n int) {
	b.Helper()
	execSQL(b, dsn, `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, status_code, response_headers, response_body)
		SELECT 't1', 'POST /v1/orders', 'pgr-' || i, repeat('f', 64), 'succeeded', 201,
		       '{"Content-Type":"application/json","Location":"/v1/orders/x"}', decode(repeat('7b', 150), 'hex')
		FROM generate_series(1, $1::int) i`, n)
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench runs script at benchConcurrency clients for benchPhase
// (prepared statements, like the service's pgx mode) and reads tps and,
// from the per-transaction log, the p99 latency.
func runPgbench(b *testing.B, bin, dsn, dir, name, script string) phaseResult {
	b.Helper()
	path := filepath.Join(dir, name+".sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	prefix := filepath.Join(dir, name+"-log")
	cmd := exec.Command(bin, "-n", "-M", "prepared", "-c", strconv.Itoa(benchConcurrency), "-j", "2",
		"-T", strconv.Itoa(int(benchSlice.Seconds())), "-f", path, "-l", "--log-prefix", prefix, dsn)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench %s: %v\n%s\nscript:\n%s", name, err, out, script)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench %s: no tps in\n%s", name, out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	if strings.Contains(string(out), "number of failed transactions: ") && !strings.Contains(string(out), "number of failed transactions: 0 ") {
		b.Errorf("pgbench %s reported failures:\n%s", name, out)
	}
	var lat []time.Duration
	logs, _ := filepath.Glob(prefix + "*")
	for _, f := range logs {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err == nil {
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	secs := benchSlice.Seconds()
	return phaseResult{n: tps * secs, elapsed: benchSlice, lat: lat}
}

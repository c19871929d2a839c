package refbench

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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemchaos/idemchaos/reference"
)

// Body is the order every request posts.
const Body = `{"sku":"A-100","qty":2,"amount":500}`

// Config shapes a comparison.
type Config struct {
	// DSN is a fresh database the service may own.
	DSN string
	// Pgbench is the pgbench binary ("" = from PATH, else /usr/bin/pgbench).
	Pgbench string
	// Wrk is the wrk binary that loads the service ("" = from PATH). When
	// there is none, an in-process Go client loads it instead, and
	// [Result.Client] says so.
	Wrk string
	// Dir holds pgbench's scripts and logs ("" = a temporary directory,
	// removed afterwards).
	Dir string
	// Concurrency is the number of clients on both sides (default 16).
	Concurrency int
	// Slice is the length of one slice of one workload (default 2s).
	Slice time.Duration
	// Rounds is the number of slices per workload (default 3).
	Rounds int
	// Logf, if set, is told what runs (progress).
	Logf func(format string, args ...any)
	_    struct{}
}

func (c *Config) defaults() {
	if c.Pgbench == "" {
		if p, err := exec.LookPath("pgbench"); err == nil {
			c.Pgbench = p
		} else {
			c.Pgbench = "/usr/bin/pgbench"
		}
	}
	if c.Wrk == "" {
		c.Wrk, _ = exec.LookPath("wrk")
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Slice <= 0 {
		c.Slice = 2 * time.Second
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Phase accumulates the slices of one workload.
type Phase struct {
	// N counts requests or transactions; Elapsed is the time they took.
	N       float64
	Elapsed time.Duration
	// Rates holds each slice's rate (per second), in order.
	Rates  []float64
	Lat    []time.Duration
	Errors int64
}

func (p *Phase) add(o Phase) {
	p.N += o.N
	p.Elapsed += o.Elapsed
	p.Rates = append(p.Rates, o.N/o.Elapsed.Seconds())
	p.Lat = append(p.Lat, o.Lat...)
	p.Errors += o.Errors
}

// Rate is the phase's overall rate per second.
func (p *Phase) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return p.N / p.Elapsed.Seconds()
}

// P99 is the 99th percentile latency.
func (p *Phase) P99() time.Duration { return percentile(p.Lat, 0.99) }

// Result is what [Run] measured.
type Result struct {
	Concurrency int
	// SvcNew and SvcReplay are the service's new-key requests and replays;
	// PgNew and PgReplay pgbench running the same SQL.
	SvcNew, SvcReplay, PgNew, PgReplay Phase
	// HTTPFloor is the HTTP round trip to a trivial handler; PgxFloor the
	// replay's one statement through pgx. A replay needs both in series.
	HTTPFloor, PgxFloor Phase
	// PgbenchVersion is what pgbench --version printed.
	PgbenchVersion string
	// Client describes the service's load generator (wrk, or the
	// in-process Go client when wrk is missing).
	Client string
}

// clientThreads is the client threads on both sides: pgbench's -j and
// wrk's -t. Both load generators are separate C processes with their own
// threads, so neither side's client takes CPU from the server it loads
// (Postgres for pgbench, the service's Go runtime for wrk).
const clientThreads = 2

// replayKeys is how many stored records each side replays, uniformly at
// random: pgbench pgr-1 … pgr-N of t1, the service rep-1 … rep-N of t1.
const replayKeys = 1000

// Ceiling is the structural ceiling of a replay: the HTTP floor and the pgx
// floor in series.
func (r *Result) Ceiling() float64 {
	h, p := r.HTTPFloor.Rate(), r.PgxFloor.Rate()
	if h == 0 || p == 0 {
		return 0
	}
	return 1 / (1/h + 1/p)
}

// Run serves the reference on cfg.DSN in-process and runs the comparison:
// Rounds slices of service new keys and pgbench new keys, alternating, then
// Rounds slices of replays, pgbench replays, and the two floors.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	res := &Result{Concurrency: cfg.Concurrency}
	if out, err := exec.CommandContext(ctx, cfg.Pgbench, "--version").Output(); err == nil {
		res.PgbenchVersion = strings.TrimSpace(string(out))
	} else {
		return nil, fmt.Errorf("refbench: pgbench: %w", err)
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "idemchaos-refbench-")
		if err != nil {
			return nil, fmt.Errorf("refbench: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- reference.Serve(sctx, reference.Config{DSN: cfg.DSN, Addr: "127.0.0.1:0", MaxConns: int32(cfg.Concurrency),
			Ready: func(a string) { ready <- a }}, io.Discard)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		return nil, fmt.Errorf("refbench: serve: %w", err)
	}
	defer func() { cancel(); <-done }()

	var keySeq atomic.Int64
	newKey := func(int) (string, string) {
		n := keySeq.Add(1)
		return fmt.Sprintf("tok-t%d", n%3+1), fmt.Sprintf("bench-%d", n)
	}
	replayKey := func(int) (string, string) { return "tok-t1", "rep-" + strconv.Itoa(rand.IntN(replayKeys)+1) }
	if err := seedReplayRecords(ctx, cfg.DSN, replayKeys); err != nil {
		return nil, err
	}
	// The service's records to replay are made by the service itself, so
	// that their fingerprints are its own.
	if err := createReplayKeys(ctx, addr, cfg.Concurrency); err != nil {
		return nil, err
	}
	newScript, replayScript := pgbenchNewScript(), pgbenchReplayScript()
	// Warm-up: connections, prepared statements.
	if _, err := runPhase(ctx, addr, cfg.Concurrency, 500*time.Millisecond, newKey); err != nil {
		return nil, err
	}
	// svcNew, svcReplay and httpFloor load the service (or the floor) for
	// one slice, with wrk when there is one.
	svcNew := func(round int) (Phase, error) { return runPhase(ctx, addr, cfg.Concurrency, cfg.Slice, newKey) }
	svcReplay := func(target string) (Phase, error) {
		return runPhase(ctx, target, cfg.Concurrency, cfg.Slice, replayKey)
	}
	res.Client = fmt.Sprintf("an in-process Go HTTP/1.1 client (%d goroutines; wrk not found)", cfg.Concurrency)
	if cfg.Wrk != "" {
		res.Client = fmt.Sprintf("wrk -t %d -c %d (a Lua script picks each request's key; p99 is the worst slice's, as wrk logs no request)", clientThreads, cfg.Concurrency)
		svcNew = func(round int) (Phase, error) {
			return runWrk(ctx, cfg, addr, fmt.Sprintf("new%d", round), wrkNewScript(fmt.Sprintf("w%d", round)))
		}
		svcReplay = func(target string) (Phase, error) { return runWrk(ctx, cfg, target, "replay", wrkReplayScript()) }
	}

	for round := range cfg.Rounds {
		cfg.Logf("reference vs pgbench: new keys, round %d/%d", round+1, cfg.Rounds)
		p, err := svcNew(round)
		if err != nil {
			return nil, err
		}
		res.SvcNew.add(p)
		if p, err = runPgbench(ctx, cfg, fmt.Sprintf("new%d", round), newScript); err != nil {
			return nil, err
		}
		res.PgNew.add(p)
	}
	floorAddr, stopFloor, err := StartHTTPFloor()
	if err != nil {
		return nil, err
	}
	defer stopFloor()
	for round := range cfg.Rounds {
		cfg.Logf("reference vs pgbench: replays and floors, round %d/%d", round+1, cfg.Rounds)
		p, err := svcReplay(addr)
		if err != nil {
			return nil, err
		}
		res.SvcReplay.add(p)
		if p, err = runPgbench(ctx, cfg, fmt.Sprintf("replay%d", round), replayScript); err != nil {
			return nil, err
		}
		res.PgReplay.add(p)
		if p, err = svcReplay(floorAddr); err != nil {
			return nil, err
		}
		res.HTTPFloor.add(p)
		if p, err = runPgxFloor(ctx, cfg); err != nil {
			return nil, err
		}
		res.PgxFloor.add(p)
	}
	if n := res.SvcNew.Errors + res.SvcReplay.Errors; n > 0 {
		return res, fmt.Errorf("refbench: %d failed requests", n)
	}
	return res, nil
}

// StartHTTPFloor serves, on a loopback port, a handler that only writes a
// fixed 150-byte JSON body with status 201, and returns its host:port and
// the function that stops it.
func StartHTTPFloor() (string, func(), error) {
	body := []byte(strings.Repeat("x", 150))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("http floor: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// runPgxFloor runs the replay's one statement from Concurrency goroutines
// through a pgx pool configured like the service's.
func runPgxFloor(ctx context.Context, cfg Config) (Phase, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return Phase{}, fmt.Errorf("pgx floor: %w", err)
	}
	pc.MaxConns = int32(cfg.Concurrency)
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return Phase{}, fmt.Errorf("pgx floor: %w", err)
	}
	defer pool.Close()
	var wg sync.WaitGroup
	var n atomic.Int64
	var firstErr atomic.Pointer[error]
	deadline := time.Now().Add(cfg.Slice)
	start := time.Now()
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				rows, err := pool.Query(ctx, reference.BenchSQL.Claim, "t1", "POST /v1/orders",
					"pgr-"+strconv.Itoa((w*61+i)%1000+1), strings.Repeat("f", 64), "tok", 30.0)
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
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
	if e := firstErr.Load(); e != nil {
		return Phase{}, fmt.Errorf("pgx floor: %w", *e)
	}
	return Phase{N: float64(n.Load()), Elapsed: time.Since(start)}, ctx.Err()
}

// runPhase posts orders from concurrency workers for d, each on its own
// kept-alive connection; pick chooses each request's (token, key). A
// response other than 201 counts as an error.
func runPhase(ctx context.Context, addr string, concurrency int, d time.Duration, pick func(worker int) (string, string)) (Phase, error) {
	var wg sync.WaitGroup
	var errs atomic.Int64
	lat := make([][]time.Duration, concurrency)
	deadline := time.Now().Add(d)
	start := time.Now()
	for w := range concurrency {
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
			for time.Now().Before(deadline) && ctx.Err() == nil {
				tok, key := pick(w)
				t0 := time.Now()
				status, err := post(conn, br, buf, tok, key)
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
	return Phase{N: float64(len(all)), Elapsed: time.Since(start), Lat: all, Errors: errs.Load()}, ctx.Err()
}

// post sends one order with token tok and key key on conn (buf is scratch
// space) and reads the response's status.
func post(conn net.Conn, br *bufio.Reader, buf []byte, tok, key string) (int, error) {
	buf = append(buf[:0], "POST /v1/orders HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer "...)
	buf = append(buf, tok...)
	buf = append(buf, "\r\nIdempotency-Key: "...)
	buf = append(buf, key...)
	buf = append(buf, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(Body)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, Body...)
	if _, err := conn.Write(buf); err != nil {
		return 0, err
	}
	return readResponse(br)
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

// seedReplayRecords stores n completed records (pgr-1 … pgr-n of t1) for
// pgbench's replays and the pgx floor.
func seedReplayRecords(ctx context.Context, dsn string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("refbench: seed: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, status_code, response_headers, response_body)
		SELECT 't1', 'POST /v1/orders', 'pgr-' || i, repeat('f', 64), 'succeeded', 201,
		       '{"Content-Type":"application/json","Location":"/v1/orders/x"}', decode(repeat('7b', 150), 'hex')
		FROM generate_series(1, $1::int) i`, n)
	if err != nil {
		return fmt.Errorf("refbench: seed: %w", err)
	}
	return nil
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench runs script at Concurrency clients for one slice (prepared
// statements, like the service's pgx mode) and reads tps and, from the
// per-transaction log, the latencies.
func runPgbench(ctx context.Context, cfg Config, name, script string) (Phase, error) {
	path := filepath.Join(cfg.Dir, name+".sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return Phase{}, fmt.Errorf("pgbench %s: %w", name, err)
	}
	prefix := filepath.Join(cfg.Dir, name+"-log")
	secs := max(1, int(cfg.Slice.Round(time.Second).Seconds()))
	cmd := exec.CommandContext(ctx, cfg.Pgbench, "-n", "-M", "prepared", "-c", strconv.Itoa(cfg.Concurrency), "-j", strconv.Itoa(clientThreads),
		"-T", strconv.Itoa(secs), "-f", path, "-l", "--log-prefix", prefix, cfg.DSN)
	cmd.Dir = cfg.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Phase{}, fmt.Errorf("pgbench %s: %w\n%s", name, err, out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return Phase{}, fmt.Errorf("pgbench %s: no tps in\n%s", name, out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	if strings.Contains(string(out), "number of failed transactions: ") && !strings.Contains(string(out), "number of failed transactions: 0 ") {
		return Phase{}, fmt.Errorf("pgbench %s reported failures:\n%s", name, out)
	}
	var lat []time.Duration
	logs, _ := filepath.Glob(prefix + "*")
	for _, f := range logs {
		raw, err := os.ReadFile(f)
		if err != nil {
			return Phase{}, fmt.Errorf("pgbench %s: %w", name, err)
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
		_ = os.Remove(f)
	}
	elapsed := time.Duration(secs) * time.Second
	return Phase{N: tps * elapsed.Seconds(), Elapsed: elapsed, Lat: lat}, nil
}

// createReplayKeys creates rep-1 … rep-replayKeys of t1 through the
// service, from concurrency workers, each key once.
func createReplayKeys(ctx context.Context, addr string, concurrency int) error {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for ctx.Err() == nil {
				n := next.Add(1)
				if n > replayKeys {
					return
				}
				if status, err := post(conn, br, nil, "tok-t1", "rep-"+strconv.FormatInt(n, 10)); err != nil || status != http.StatusCreated {
					failed.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("refbench: %d workers failed to create the records to replay", n)
	}
	return ctx.Err()
}

// runWrk runs wrk with script against addr for one slice and reads what
// the script's done() printed: requests, duration, p99 and errors. wrk
// keeps no per-request log, so the phase's latencies are the slice's p99
// alone (the phase's P99 is then the worst slice's).
func runWrk(ctx context.Context, cfg Config, addr, name, script string) (Phase, error) {
	path := filepath.Join(cfg.Dir, "wrk-"+name+".lua")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return Phase{}, fmt.Errorf("wrk %s: %w", name, err)
	}
	secs := max(1, int(cfg.Slice.Round(time.Second).Seconds()))
	out, err := exec.CommandContext(ctx, cfg.Wrk, "-t", strconv.Itoa(clientThreads), "-c", strconv.Itoa(cfg.Concurrency),
		"-d", strconv.Itoa(secs)+"s", "-s", path, "http://"+addr+"/v1/orders").CombinedOutput()
	if err != nil {
		return Phase{}, fmt.Errorf("wrk %s: %w\n%s", name, err, out)
	}
	m := wrkDoneRE.FindSubmatch(out)
	if m == nil {
		return Phase{}, fmt.Errorf("wrk %s: no summary in\n%s", name, out)
	}
	var v [4]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(string(m[i+1]), 10, 64)
	}
	if v[1] <= 0 {
		return Phase{}, fmt.Errorf("wrk %s: empty run\n%s", name, out)
	}
	return Phase{N: float64(v[0]), Elapsed: time.Duration(v[1]) * time.Microsecond,
		Lat: []time.Duration{time.Duration(v[2]) * time.Microsecond}, Errors: v[3]}, nil
}

var wrkDoneRE = regexp.MustCompile(`IDEMCHAOS-WRK requests=(\d+) duration_us=(\d+) p99_us=(\d+) errors=(\d+)`)

// wrkCommon is the part of both wrk scripts that builds requests like the
// Go client's and prints the summary runWrk reads. Any status outside
// 2xx/3xx, and any socket error, counts as an error.
const wrkCommon = `wrk.method = "POST"
wrk.body = '` + Body + `'
hdr = {["Host"] = "bench", ["Content-Type"] = "application/json", ["Authorization"] = "Bearer tok-t1"}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("IDEMCHAOS-WRK requests=%d duration_us=%d p99_us=%d errors=%d\n", summary.requests,
    summary.duration, latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
`

// wrkNewScript posts a fresh key per request (prefix, wrk's thread, a
// per-thread counter), rotating the three tenants like the Go client.
func wrkNewScript(prefix string) string {
	return wrkCommon + `threads = 0
setup = function(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
n = 0
request = function()
  n = n + 1
  hdr["Authorization"] = "Bearer tok-t" .. (n % 3 + 1)
  hdr["Idempotency-Key"] = "` + prefix + `-" .. tid .. "-" .. n
  return wrk.format(nil, nil, hdr)
end
`
}

// wrkReplayScript replays one of the records createReplayKeys made,
// uniformly at random, as pgbench's replay script does with its own.
func wrkReplayScript() string {
	return wrkCommon + `request = function()
  hdr["Idempotency-Key"] = "rep-" .. math.random(1, ` + strconv.Itoa(replayKeys) + `)
  return wrk.format(nil, nil, hdr)
end
`
}

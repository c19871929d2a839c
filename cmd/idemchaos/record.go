package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/recorder"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

type recordFlags struct {
	listen       string
	upstream     string
	historyFile  string
	allowRemote  bool
	tenantHeader string
	scenario     string
	keyHeader    string
	redact       []string
	timeout      time.Duration
	intentHeader string
	faults       string
	seed         int64
}

func (m *Main) recordCmd() *cobra.Command {
	var f recordFlags
	cmd := &cobra.Command{
		Use:   "record --listen 127.0.0.1:PORT --upstream URL --history FILE",
		Short: "Record real traffic through a reverse proxy as a history for check",
		Long: `record is a reverse proxy: point real clients (an app, a payment provider's
callbacks, a queue's redeliveries) at --listen, and every request is forwarded to
--upstream and written, with what became of it, to --history in the JSONL format
check reads. Judge it afterwards, with the effects your service really produced:

  idemchaos check --effects scenario.yaml FILE.jsonl

Intents are unknown to a proxy: each (tenant, key) is its own intent. The tenant
is read as a scenario's run sends it: from --tenant-header, or where the scenario
given with -s says (endpoint.tenant: the bearer token through its tokens, a
header, a query parameter, the path or a body field), else as a short hash of
the Authorization header (the credential itself is never written). An attempt
the upstream never saw (no connection) is "fail"; one sent without a whole
response back (a timeout, a reset) is "info": it may have executed.

With --intent-header NAME, the intent of every attempt is the value of that
request header — set by your end-to-end suite once per user action, kept across
its retries — so the recording is a client history: attempts are numbered per
intent, and check judges it with the client invariants (key-stable,
payload-stable, key-per-intent, no-retry-permanent, retry-after-honoured, ...).
A re-keying app is caught from its own test suite. The header is not forwarded.

--faults FILE.yaml (needs --intent-header) injects client-path faults into the
live traffic: a file holding a faults: list written as a client scenario's
(response-drop, gateway-5xx, rate-limit, unavailable, in-flight, reject, refuse,
stall, latency), aimed per attempt of each intent by its when: (fraction, nth,
attempt, attempts, every; at/for alone: a window from the start), the intents a
fraction hits drawn from --seed and the intent's name.

The headers named by --redact, and body fields of those names in JSON and form
bodies, are written as "[redacted]"; clients and the upstream see the real values.

Ctrl-C (or SIGTERM, SIGHUP) stops accepting, lets requests in flight finish, closes
the history, prints its path and exits 130. A request is forwarded only once its line
is in the file; when a write fails (a full disk) record stops at once, forwards
nothing more, and exits 3 counting the attempts the file holds. The upstream and the
listen address must be loopback unless --allow-remote.`,
		Example: `  idemchaos record --listen 127.0.0.1:9090 --upstream http://127.0.0.1:8090 --history clicks.jsonl
  idemchaos record --listen 127.0.0.1:9090 --upstream http://127.0.0.1:8090 --history run.jsonl -s my-api.yaml
  idemchaos record --listen 127.0.0.1:9090 --upstream http://127.0.0.1:8090 --history run.jsonl --tenant-header X-Tenant-ID --redact Authorization,card_number
  idemchaos record --listen 127.0.0.1:9090 --upstream http://127.0.0.1:8090 --history e2e.jsonl --intent-header X-Test-Intent --faults drops.yaml --seed 7`,
		Args: cobra.NoArgs,
		// A signal is how a recording ends: it answers for itself (130,
		// with the history's path).
		Annotations: map[string]string{signalStops: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.runRecord(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9090", "where clients connect (host:port; port 0 picks one)")
	fl.StringVar(&f.upstream, "upstream", "", "your service's base URL")
	fl.StringVar(&f.historyFile, "history", "", "the history file to write (JSONL)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow an upstream or listen address that is not loopback")
	fl.StringVar(&f.tenantHeader, "tenant-header", "", "the request header that names the tenant")
	fl.StringVarP(&f.scenario, "scenario", "s", "", "read the key header, where the tenant is (endpoint.tenant, tokens) and the contract from this scenario")
	fl.StringVar(&f.keyHeader, "key-header", "", "the idempotency-key header (default: the scenario's, else Idempotency-Key)")
	fl.StringSliceVar(&f.redact, "redact", recorder.DefaultRedact, "headers and body fields written as [redacted]")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long one upstream exchange may take")
	fl.StringVar(&f.intentHeader, "intent-header", "", "the request header naming each attempt's intent: a client history, judged by the client invariants (not forwarded)")
	fl.StringVar(&f.faults, "faults", "", "a YAML file with a faults: list of client-path faults to inject (needs --intent-header)")
	fl.Int64Var(&f.seed, "seed", 1, "the seed that aims --faults' fractions at intents")
	_ = cmd.MarkFlagRequired("upstream")
	_ = cmd.MarkFlagRequired("history")
	return cmd
}

func (m *Main) runRecord(cmd *cobra.Command, f recordFlags) error {
	up, err := url.Parse(f.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return usageError(fmt.Errorf("record: --upstream %q: want http://host:port", f.upstream))
	}
	// run's rule, through the one gate: the upstream's host (every address
	// it resolves to) and the listen address must be loopback unless
	// --allow-remote, checked before anything is sent or bound; the
	// upstream's connections are then dialled through the gate too.
	g := addrgate.New(addrgate.Config{AllowRemote: f.allowRemote})
	if _, err := g.Resolve(cmd.Context(), netaddr.HostPort(up), "--upstream"); err != nil {
		return usageError(fmt.Errorf("record: %w", err))
	}
	listen, err := g.ListenAddr(cmd.Context(), f.listen, "--listen")
	if err != nil {
		return usageError(fmt.Errorf("record: %w", err))
	}
	opts := recorder.Options{Upstream: up, Dial: g.For("--upstream").DialContext, KeyHeader: f.keyHeader, Redact: f.redact, Timeout: f.timeout, Scenario: "recording",
		IntentHeader: f.intentHeader, Seed: f.seed}
	if f.faults != "" {
		if f.intentHeader == "" {
			return usageError(errors.New("record: --faults needs --intent-header: a fault is aimed at the attempts of an intent, and without it record knows no intents"))
		}
		specs, err := scenarios.LoadFaults(f.faults)
		if err != nil {
			return usageError(err)
		}
		for i, spec := range specs {
			a, err := recorder.NewAim(i, spec)
			if err != nil {
				return usageError(fmt.Errorf("%s: %w", f.faults, err))
			}
			opts.Faults = append(opts.Faults, a)
		}
	}
	if f.scenario != "" {
		s, err := scenarios.Load(f.scenario)
		if err != nil {
			return usageError(err)
		}
		opts.Scenario = s.Name
		if opts.KeyHeader == "" {
			opts.KeyHeader = s.Endpoint.KeyHeader
		}
		opts.Tenant = recorder.ScenarioTenant(s.Endpoint)
		opts.Contract = recorder.ScenarioContract(s)
	}
	if f.tenantHeader != "" {
		name := f.tenantHeader
		opts.Tenant = func(r *http.Request, _ []byte) string { return r.Header.Get(name) }
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usageError(fmt.Errorf("record: %w", err))
	}
	file, err := os.Create(f.historyFile)
	if err != nil {
		ln.Close()
		return usageError(fmt.Errorf("record: %w", err))
	}
	lines := &lineFile{f: file}
	w := history.NewWriter(lines)
	started := time.Now()
	rec, err := recorder.New(w, opts)
	if err != nil {
		ln.Close()
		file.Close()
		return usageError(fmt.Errorf("record: %w", err))
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "recording on http://%s → %s, history %s (Ctrl-C to stop)\n", ln.Addr(), up, f.historyFile)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// Every event is in the file as soon as it is written (the recorder
	// flushes each), so a history read while recording, or after a
	// SIGKILL, holds everything up to the last line.
	var serveErr error
	select {
	case <-cmd.Context().Done():
	case serveErr = <-served:
	case <-rec.Failed():
	}
	// Requests in flight finish and are recorded before the file closes.
	shutdown, cancel := context.WithTimeout(context.Background(), f.timeout+time.Second)
	defer cancel()
	rec.Close() // a stalled attempt lets go
	_ = srv.Shutdown(shutdown)
	rec.Wait(shutdown) // the faults' hijacked connections too
	ferr := rec.Flush()
	if ferr != nil {
		// The file ends where its last whole line does, with the marker
		// that makes every verdict on it unknown when there is room for
		// it: the recording was cut short, not ended.
		lines.seal(history.AppendEvent(nil, &history.Event{Type: history.TypeInterrupted,
			NS: max(int64(time.Since(started)), 1), Error: "recording stopped: " + ferr.Error()}))
	}
	if cerr := file.Close(); ferr == nil {
		ferr = cerr
	}
	ok, info, fail := rec.Stats()
	fmt.Fprintf(errw, "history %s: %d attempts (%d ok, %d info, %d fail)\n", f.historyFile, ok+info+fail, ok, info, fail)
	if lost := rec.Forwarded() - (ok + info + fail); ferr != nil && lost > 0 {
		fmt.Fprintf(errw, "%d more were forwarded to the upstream whose outcome is not in the history\n", lost)
	}
	if ferr != nil {
		return usageError(fmt.Errorf("record: stopped: %w", ferr))
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return usageError(fmt.Errorf("record: %w", serveErr))
	}
	fmt.Fprintf(errw, "check it: idemchaos check --effects SCENARIO.yaml %s\n", f.historyFile)
	return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted: history kept: %s", f.historyFile)}
}

// lineFile is the history file, counting the bytes of whole writes. The
// recorder flushes every event with one write, so the count always ends
// on a line: after a failed write, the file is cut back to it.
type lineFile struct {
	f     *os.File
	whole int64
}

func (l *lineFile) Write(p []byte) (int, error) {
	n, err := l.f.Write(p)
	if err == nil {
		l.whole += int64(n)
	}
	return n, err
}

// seal cuts the file back to its last whole line (a truncation needs no
// free space) and appends line when it fits; when it does not, the file
// ends at the last whole event.
func (l *lineFile) seal(line []byte) {
	if l.f.Truncate(l.whole) != nil {
		return
	}
	if _, err := l.f.WriteAt(append(line, '\n'), l.whole); err != nil {
		_ = l.f.Truncate(l.whole)
	}
}

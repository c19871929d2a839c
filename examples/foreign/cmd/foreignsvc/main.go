// Command foreignsvc serves one of the foreign corpus's order services by
// name, with the flags that configure it:
//
//	foreignsvc -svc ledger [-retention 24h] [-fail-every 0] [-cache-errors] [-complete-on-200-only] [-fingerprint-command] [-replay-body-only]
//	foreignsvc -svc shopfront [-ttl 24h] [-fingerprint-parsed] [-replay-by-rerun]
//	foreignsvc -svc accounts -dsn postgres://... [-select-then-insert] [-key-only-index]
//	foreignsvc -svc fleet [-slow-charge 400ms] [-local-claims]
//	foreignsvc -svc boxoffice [-claim-after-write]
//	foreignsvc -svc stockroom -dsn 'root@tcp(127.0.0.1:3306)/stock' [-upsert-claim]
//	foreignsvc -svc kiosk [-backlog 4096] [-workers 4]
//
// It listens on -addr (default a free loopback port) and prints
// "listening on http://HOST:PORT" on stdout once it accepts connections.
// SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign/accounts"
	"github.com/idemchaos/idemchaos/examples/foreign/boxoffice"
	"github.com/idemchaos/idemchaos/examples/foreign/fleet"
	"github.com/idemchaos/idemchaos/examples/foreign/kiosk"
	"github.com/idemchaos/idemchaos/examples/foreign/ledger"
	"github.com/idemchaos/idemchaos/examples/foreign/shopfront"
	"github.com/idemchaos/idemchaos/examples/foreign/stockroom"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "foreignsvc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("foreignsvc", flag.ContinueOnError)
	svc := fs.String("svc", "", "the service: ledger, shopfront, fleet, boxoffice, accounts, stockroom or kiosk")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	var lo ledger.Options
	fs.DurationVar(&lo.Retention, "retention", 0, "ledger: how long keys are kept (default 24h)")
	fs.IntVar(&lo.FailEvery, "fail-every", 0, "ledger: the payment gateway fails every n-th charge")
	fs.BoolVar(&lo.CacheErrors, "cache-errors", false, "ledger: store 5xx answers too")
	fs.BoolVar(&lo.CompleteOn200Only, "complete-on-200-only", false, "ledger: finish a record only on 200 OK")
	fs.BoolVar(&lo.FingerprintCommand, "fingerprint-command", false, "ledger: fingerprint the decoded command")
	fs.BoolVar(&lo.ReplayBodyOnly, "replay-body-only", false, "ledger: store status and body only")
	var so shopfront.Options
	fs.DurationVar(&so.TTL, "ttl", 0, "shopfront: how long keys are remembered (default 24h)")
	fs.BoolVar(&so.FingerprintParsed, "fingerprint-parsed", false, "shopfront: compare the parsed order")
	fs.BoolVar(&so.ReplayByRerun, "replay-by-rerun", false, "shopfront: rebuild replays by re-running the handler")
	var fo fleet.Options
	fs.DurationVar(&fo.SlowCharge, "slow-charge", 0, "fleet: how long a charge takes on the first instance (default 400ms)")
	fs.BoolVar(&fo.LocalClaims, "local-claims", false, "fleet: keep in-progress claims in each instance's memory")
	var bo boxoffice.Options
	fs.BoolVar(&bo.ClaimAfterWrite, "claim-after-write", false, "boxoffice: record the key only after the booking")
	var ao accounts.Options
	dsn := fs.String("dsn", os.Getenv("ACCOUNTS_DSN"), "accounts: Postgres DSN (env ACCOUNTS_DSN); stockroom: MariaDB DSN (user@tcp(host:port)/db)")
	fs.BoolVar(&ao.SelectThenInsert, "select-then-insert", false, "accounts: the first release's claim")
	fs.BoolVar(&ao.KeyOnlyIndex, "key-only-index", false, "accounts: records unique by key alone")
	var ro stockroom.Options
	fs.BoolVar(&ro.UpsertClaim, "upsert-claim", false, "stockroom: the first release's upsert claim")
	backlog := fs.Int("backlog", 4096, "kiosk: the listen backlog")
	workers := fs.Int("workers", 4, "kiosk: workers, each serving one connection at a time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *svc == "kiosk" {
		// The kiosk is a worker pool behind its own listen backlog.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		ln, err := kiosk.Listen(*addr, *backlog)
		if err != nil {
			return err
		}
		fmt.Printf("listening on http://%s\n", ln.Addr())
		return kiosk.Serve(ctx, ln, kiosk.New(kiosk.Options{}), *workers)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var h http.Handler
	switch *svc {
	case "ledger":
		h = ledger.New(lo)
	case "shopfront":
		h = shopfront.New(so)
	case "fleet":
		h = fleet.New(fo)
	case "boxoffice":
		h = boxoffice.New(bo)
	case "accounts":
		if *dsn == "" {
			return errors.New("accounts needs -dsn")
		}
		// The pool outlives the signal so that requests in flight finish.
		var err error
		if h, err = accounts.New(context.WithoutCancel(ctx), *dsn, ao); err != nil {
			return err
		}
	case "stockroom":
		if *dsn == "" {
			return errors.New("stockroom needs -dsn")
		}
		handler, closeDB, err := stockroom.New(context.WithoutCancel(ctx), *dsn, ro)
		if err != nil {
			return err
		}
		defer closeDB()
		h = handler
	default:
		return fmt.Errorf("unknown -svc %q (ledger, shopfront, fleet, boxoffice, accounts, stockroom or kiosk)", *svc)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Command ordersvc serves the example order API of package ordersvc.
//
//	ordersvc --dsn postgres://postgres@127.0.0.1:5432/orders --addr 127.0.0.1:8090 [--buggy]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/examples/ordersvc"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("ORDERSVC_DSN"), "Postgres DSN (env ORDERSVC_DSN)")
	// The environment variables let a container image (idemchaos's
	// target.image) configure it without a command line.
	addr := flag.String("addr", envOr("ORDERSVC_ADDR", "127.0.0.1:8090"), "listen address (env ORDERSVC_ADDR)")
	buggy := flag.Bool("buggy", os.Getenv("ORDERSVC_BUGGY") == "1", "make the check-then-insert mistake, for idemchaos to catch (env ORDERSVC_BUGGY=1)")
	flag.Parse()
	if err := run(*dsn, *addr, *buggy); err != nil {
		fmt.Fprintln(os.Stderr, "ordersvc:", err)
		os.Exit(1)
	}
}

func run(dsn, addr string, buggy bool) error {
	if dsn == "" {
		return errors.New("--dsn is required")
	}
	// The pool outlives the signal: requests in flight at shutdown finish.
	poolCtx, closePool := context.WithCancel(context.Background())
	defer closePool()
	h, err := ordersvc.New(poolCtx, dsn, ordersvc.Options{Buggy: buggy})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	slog.Info("ordersvc listening", "addr", addr, "buggy", buggy)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

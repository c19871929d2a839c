package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemchaos/idemchaos/reference"
)

// newReferenceCmd is `idemchaos reference`: the reference service
// (serve), its outbox consumer (consume) and the mutant catalogue
// (mutants). Flags fall back to IDEMCHAOS_* environment variables.
func newReferenceCmd() *cobra.Command { return newReferenceCmdEnv(os.LookupEnv) }

// newReferenceCmdEnv is newReferenceCmd with an injected environment
// lookup, so flag/env resolution can be tested.
func newReferenceCmdEnv(lookup func(string) (string, bool)) *cobra.Command {
	cmd := &cobra.Command{
		Use: "reference",
		Example: `  idemchaos reference serve --dsn postgres://postgres@127.0.0.1:5432/shop --addr 127.0.0.1:8080
  idemchaos reference consume --dsn postgres://postgres@127.0.0.1:5432/shop
  idemchaos reference mutants`,
		Short: "The reference idempotent service on Postgres, and its mutants",
	}
	cmd.AddCommand(newReferenceServeCmd(lookup), newReferenceConsumeCmd(lookup), newReferenceMutantsCmd())
	return cmd
}

func newReferenceServeCmd(lookup func(string) (string, bool)) *cobra.Command {
	var (
		cfg    reference.Config
		tokens string
	)
	cmd := &cobra.Command{
		Use: "serve",
		Example: `  idemchaos reference serve --dsn postgres://postgres@127.0.0.1:5432/shop
  idemchaos reference serve --dsn "$DSN" --mutant check-then-insert --failpoints --addr 127.0.0.1:0 --addr-file addr.txt
  IDEMCHAOS_DSN=postgres://postgres@127.0.0.1:5432/shop idemchaos reference serve --retention 48h --max-retry-window 24h`,
		Short:       "Run the reference service (POST /v1/orders, callbacks, /metrics, /healthz)",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{signalStops: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := referenceApplyEnv(cmd.Flags(), lookup); err != nil {
				return err
			}
			if tokens != "" {
				m, err := parseReferenceTokens(tokens)
				if err != nil {
					return err
				}
				cfg.Tokens = m
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return reference.Serve(ctx, cfg, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DSN, "dsn", "", "primary Postgres DSN (env IDEMCHAOS_DSN)")
	f.StringVar(&cfg.ReplicaDSN, "replica-dsn", "", "standby DSN, read only by the replica-read mutant (env IDEMCHAOS_REPLICA_DSN)")
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address; port 0 picks one (env IDEMCHAOS_ADDR)")
	f.StringVar(&cfg.AddrFile, "addr-file", "", "write the listen address to this file once listening (env IDEMCHAOS_ADDR_FILE)")
	f.StringVar(&cfg.Mutant, "mutant", "", "switch on one mutant, see 'reference mutants' (env IDEMCHAOS_MUTANT)")
	f.DurationVar(&cfg.Retention, "retention", 24*time.Hour, "key record retention (env IDEMCHAOS_RETENTION)")
	f.DurationVar(&cfg.MaxRetryWindow, "max-retry-window", time.Hour, "longest client retry window; retention must be ≥ it (env IDEMCHAOS_MAX_RETRY_WINDOW)")
	f.DurationVar(&cfg.Lease, "lease", 30*time.Second, "lease of a 'processing' record (env IDEMCHAOS_LEASE)")
	f.DurationVar(&cfg.PurgeInterval, "purge-interval", time.Minute, "retention purge period (env IDEMCHAOS_PURGE_INTERVAL)")
	f.BoolVar(&cfg.Failpoints, "failpoints", false, "enable the loopback-only /debug/ endpoints (env IDEMCHAOS_FAILPOINTS)")
	f.StringVar(&tokens, "tokens", "", "bearer tokens as token=tenant,... (default tok-t1=t1,tok-t2=t2,tok-t3=t3) (env IDEMCHAOS_TOKENS)")
	f.StringVar(&cfg.ProviderToken, "provider-token", reference.DefaultProviderToken, "payment provider's bearer token (env IDEMCHAOS_PROVIDER_TOKEN)")
	f.StringVar(&cfg.ProviderSecret, "provider-secret", reference.DefaultProviderSecret, "payment provider's signing secret: each callback's Webhook-Signature is an HMAC-SHA256 under it (env IDEMCHAOS_PROVIDER_SECRET)")
	f.Int64Var(&cfg.InitialBalance, "initial-balance", 1_000_000_000_000, "starting balance of each tenant's account (env IDEMCHAOS_INITIAL_BALANCE)")
	f.Int32Var(&cfg.MaxConns, "max-conns", 16, "primary connection pool size (env IDEMCHAOS_MAX_CONNS)")
	return cmd
}

func newReferenceConsumeCmd(lookup func(string) (string, bool)) *cobra.Command {
	var (
		cfg      reference.ConsumerConfig
		addrFile string
	)
	cmd := &cobra.Command{
		Use: "consume",
		Example: `  idemchaos reference consume --dsn postgres://postgres@127.0.0.1:5432/shop
  idemchaos reference consume --dsn "$DSN" --exit-when-idle`,
		Short:       "Run an outbox consumer (at-least-once delivery, exactly-once notification)",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{signalStops: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := referenceApplyEnv(cmd.Flags(), lookup); err != nil {
				return err
			}
			if addrFile != "" {
				cfg.Ready = func(addr string) {
					if err := os.WriteFile(addrFile, []byte(addr+"\n"), 0o644); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "write %s: %v\n", addrFile, err)
					}
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return reference.Consume(ctx, cfg, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DSN, "dsn", "", "primary Postgres DSN (env IDEMCHAOS_DSN)")
	f.StringVar(&cfg.Name, "name", "", "consumer name recorded in consumed_events (default consumer-<pid>) (env IDEMCHAOS_CONSUMER_NAME)")
	f.StringVar(&cfg.Mutant, "mutant", "", "mutant; only consumer-no-dedupe changes the consumer (env IDEMCHAOS_MUTANT)")
	f.IntVar(&cfg.Batch, "batch", 16, "events per claim (env IDEMCHAOS_BATCH)")
	f.DurationVar(&cfg.VisibilityTimeout, "visibility-timeout", 30*time.Second, "redelivery delay of an unacknowledged event (env IDEMCHAOS_VISIBILITY_TIMEOUT)")
	f.DurationVar(&cfg.PollInterval, "poll-interval", 100*time.Millisecond, "pause between empty claims (env IDEMCHAOS_POLL_INTERVAL)")
	f.BoolVar(&cfg.ExitWhenIdle, "exit-when-idle", false, "exit once no event is visible (env IDEMCHAOS_EXIT_WHEN_IDLE)")
	f.BoolVar(&cfg.Failpoints, "failpoints", false, "serve loopback-only /debug/failpoints on --debug-addr (env IDEMCHAOS_FAILPOINTS)")
	f.StringVar(&cfg.DebugAddr, "debug-addr", "127.0.0.1:0", "failpoint listener (env IDEMCHAOS_DEBUG_ADDR)")
	f.StringVar(&addrFile, "addr-file", "", "write the debug listener's address here once running (env IDEMCHAOS_ADDR_FILE)")
	return cmd
}

func newReferenceMutantsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "mutants",
		Example: `  idemchaos reference mutants`,
		Short:   "List the mutants, the pitfall each embodies and the invariant that catches it",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MUTANT\tCAUGHT BY\tPITFALL")
			for _, m := range reference.Mutants() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, m.Invariant, m.Pitfall)
			}
			return tw.Flush()
		},
	}
}

// referenceApplyEnv sets every flag the user did not pass from IDEMCHAOS_<FLAG>
// (upper case, '-' → '_'), read through lookup.
func referenceApplyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := "IDEMCHAOS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if f.Name == "name" {
			name = "IDEMCHAOS_CONSUMER_NAME"
		}
		if v, ok := lookup(name); ok && v != "" {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, serr)
			}
		}
	})
	return err
}

// parseReferenceTokens parses "tok=tenant,tok2=tenant2".
func parseReferenceTokens(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		tok, tenant, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || tok == "" || tenant == "" {
			return nil, fmt.Errorf("tokens: %q is not token=tenant", pair)
		}
		m[tok] = tenant
	}
	return m, nil
}

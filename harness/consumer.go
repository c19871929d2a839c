package harness

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// runConsumer runs a consumer scenario once: the broker it names is
// started beside whichever environment runs (its store in a directory of
// the run's, removed after), the user's consumer on it, the plan's
// messages published with the scenario's delivery fault, and the history
// that [broker.Deliver] wrote judged as any run's is. A broker kind lives
// in its own package (harness/broker/nats), which the program must link.
func (r *Runner) runConsumer(ctx context.Context, s *scenarios.Scenario, opts RunOptions) (*Outcome, error) {
	start := time.Now()
	out := &Outcome{Scenario: s, Seed: opts.Seed, Invocation: opts.Invocation}
	startBroker, ok := broker.Lookup(s.Broker.Kind)
	if !ok {
		return nil, fmt.Errorf("%w: %s: broker kind %q is not linked into this program (linked: %s); import _ \"github.com/idemchaos/idemchaos/harness/broker/%s\"",
			ErrSetup, s.Where("broker.kind"), s.Broker.Kind, strings.Join(broker.Kinds(), ", "), s.Broker.Kind)
	}
	checker, err := s.Checker()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	judge, err := s.CheckerOptions()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	contract, err := s.CheckerContract()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	names := make([]string, len(s.Invariants))
	for i, inv := range s.Invariants {
		names[i] = inv.Name
	}
	ora := oracleFor(r.gate(), s.Effects, nil, oracleTenants(s), "", false)
	if ora == nil {
		return nil, fmt.Errorf("%w: %s: a consumer scenario reads its effects with the sql or http oracle", ErrSetup, s.Where("effects.oracle"))
	}
	dir, err := os.MkdirTemp("", "idemchaos-broker-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer os.RemoveAll(dir)
	// The broker bounds a message's deliveries by the contract's
	// max_deliveries: NATS's MaxDeliver, RabbitMQ's delivery limit,
	// Redis's IDEMCHAOS_REDIS_MAX_DELIVER for the consumer to keep.
	b, err := startBroker(ctx, broker.Options{Dir: dir, Gate: r.gate(), AckWait: s.Broker.AckWait,
		MaxDeliver: cmp.Or(contract.MaxDeliveries, checkers.DefaultMaxDeliveries)})
	if err != nil {
		return nil, fmt.Errorf("%w: broker %s: %w", ErrSetup, s.Broker.Kind, err)
	}
	defer b.Close(context.WithoutCancel(ctx))
	path, f, err := r.historyFile(s.Name, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer f.Close()
	out.HistoryPath = path
	log, err := os.Create(filepath.Join(dir, "consumer.log"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer log.Close()
	var consumerDir string
	if s.File != "" {
		consumerDir = filepath.Dir(s.File) // a command relative to the scenario file
	}
	w := history.NewWriter(f)
	msgs := broker.Messages(opts.Seed, s.Messages.Count)
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: s.Consumer.Command, Instances: s.Consumer.Instances, Env: s.Consumer.Env, Dir: consumerDir, Log: log},
		Messages: msgs, Fault: s.Messages.Fault, Target: s.Messages.Target,
		Effects: ora.Effects, Recorder: w, Scenario: s.Name, Seed: opts.Seed,
		Invariants: names, Contract: contract.Meta(),
	})
	// A poison message left undelivered or unsettled is what
	// bounded-redelivery judges, not a run that failed to drain.
	if err == nil && !st.Drained && s.Messages.Fault != scenarios.MessageFaultPoisonMessage {
		tail, _ := os.ReadFile(log.Name())
		err = fmt.Errorf("the consumer did not acknowledge every message within the drain (%d acks for %d messages); its output ends:\n%s",
			st.Acks, st.Published, lastLines(string(tail), 10))
	}
	if err != nil {
		_ = w.Write(&history.Event{Type: history.TypeEnvironment, Error: err.Error(), NS: time.Since(start).Nanoseconds()})
		_ = w.Flush()
		return out, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := f.Close(); err != nil {
		return out, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if out.History, err = loadHistory(path, history.LoadOptions{}); err != nil {
		return out, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	out.Requests = int64(st.Published + st.Duplicates)
	j := checkers.Judge(out.History, checker, judge...)
	for _, js := range j.Steps {
		out.Steps = append(out.Steps, StepOutcome{Name: s.Name, Expect: "clean", Result: js.Result, Met: js.Met})
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

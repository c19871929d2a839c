package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemchaos/idemchaos/harness/broker"
	bnats "github.com/idemchaos/idemchaos/harness/broker/nats"
	"github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
	"github.com/idemchaos/idemchaos/history"
)

// Issue #25's targets (its Performance paragraph).
const (
	targetNATSStart   = 0.050 // seconds, the embedded broker's start
	targetDeliverRate = 0.5   // idemchaos's consumer run over the NATS client's async publish
	targetRabbitStart = 5.0   // seconds, a throwaway RabbitMQ node ready
)

// ConsumersResult is the consumers section (issue #25): the brokers'
// start-up and idemchaos's consumer path against the broker's own client,
// in interleaved rounds of one run. Starts are seconds; rates messages/s.
type ConsumersResult struct {
	Rounds   int
	Messages int // per rate sample
	// NATSStart is the embedded NATS server's start (JetStream, the run's
	// stream and consumer, the harness's connection; its close not timed).
	NATSStart Summary
	// Deliver is idemchaos's consumer run on that broker, as a scenario
	// runs it (broker.Deliver): every message published and recorded to a
	// history file, delivered through the consumers' hop to a consumer
	// process (a copy of this program pulling and acknowledging each), the
	// acks recorded; timed from the first publish to the history flushed.
	// Publish is its publishing alone (each publish waits for JetStream's
	// answer, as a run records it), and ClientAsync the NATS Go client
	// publishing asynchronously alone to a broker of its own, its acks
	// awaited: the yardstick.
	Deliver, Publish, ClientAsync Summary
	// RabbitStart is a throwaway RabbitMQ node from Debian's binaries,
	// ready (READY=1, the queue declared, the harness connected);
	// RabbitErr says why it was not measured.
	RabbitStart Summary
	RabbitErr   string
}

// consumerEnv names the consumer role: a copy of the program that sees it
// consumes the NATS broker of its environment ([MaybeConsumer]).
const consumerEnv = "IDEMCHAOS_BENCH_CONSUMER"

// MaybeConsumer runs the consumers section's consumer and exits when the
// environment names that role; otherwise it returns at once. The command's
// main and this package's tests call it first.
func MaybeConsumer() {
	if os.Getenv(consumerEnv) == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := consume(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "idemchaos bench consumer:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// consume pulls and acknowledges every message of the broker's consumer
// until ctx ends: the plainest consumer, so that the figure is the
// harness's path, not a consumer's work.
func consume(ctx context.Context) error {
	nc, err := natsgo.Connect(os.Getenv(bnats.EnvURL))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, os.Getenv(bnats.EnvStream), os.Getenv(bnats.EnvConsumer))
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); it.Stop() }()
	for {
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := m.Ack(); err != nil {
			return err
		}
	}
}

func (b *bench) consumers(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	n := b.opts.ConsumerMessages
	res := &ConsumersResult{Messages: n}
	b.rep.Consumers = res
	msgs := broker.Messages(1, n)
	var starts, delivers, publishes, asyncs, rabbits []float64
	for i := range b.opts.Repeats {
		dir, err := os.MkdirTemp("", "idemchaos-bench-consumers-")
		if err != nil {
			return err
		}
		start, err := natsStart(ctx, dir)
		if err == nil {
			starts = append(starts, start)
			var async, deliver, publish float64
			if async, err = clientAsync(ctx, filepath.Join(dir, "async"), msgs); err == nil {
				asyncs = append(asyncs, async)
				if deliver, publish, err = deliverRate(ctx, filepath.Join(dir, "deliver"), exe, msgs); err == nil {
					delivers, publishes = append(delivers, deliver), append(publishes, publish)
				}
			}
		}
		if res.RabbitErr == "" {
			if r, rerr := rabbitStart(ctx, dir); rerr != nil {
				res.RabbitErr = rerr.Error()
			} else {
				rabbits = append(rabbits, r)
			}
		}
		_ = os.RemoveAll(dir)
		if err != nil {
			return err
		}
		res.Rounds = i + 1
		res.NATSStart, res.Deliver, res.Publish, res.ClientAsync = Summarize(starts), Summarize(delivers), Summarize(publishes), Summarize(asyncs)
		res.RabbitStart = Summarize(rabbits)
		b.logf("consumers %d/%d: nats start %.1f ms, deliver %s msg/s (publish alone %s), client async %s msg/s, rabbitmq ready %.2f s",
			i+1, b.opts.Repeats, start*1000, rate(delivers[i]), rate(publishes[i]), rate(asyncs[i]), last(rabbits))
	}
	return nil
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

// natsStart times one embedded broker's start.
func natsStart(ctx context.Context, dir string) (float64, error) {
	t := time.Now()
	br, err := bnats.Start(ctx, broker.Options{Dir: filepath.Join(dir, "start")})
	if err != nil {
		return 0, err
	}
	el := time.Since(t).Seconds()
	return el, br.Close(context.WithoutCancel(ctx))
}

// clientAsync is the NATS Go client's rate publishing msgs asynchronously
// to the run's subject of a broker of its own, every ack awaited.
func clientAsync(ctx context.Context, dir string, msgs []broker.Message) (float64, error) {
	br, err := bnats.Start(ctx, broker.Options{Dir: dir})
	if err != nil {
		return 0, err
	}
	defer br.Close(context.WithoutCancel(ctx))
	nc, err := natsgo.Connect(br.URL())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return 0, err
	}
	t := time.Now()
	for _, m := range msgs {
		if _, err := js.PublishAsync(bnats.Subject, m.Body); err != nil {
			return 0, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return 0, errors.New("the NATS client's async publishes were not acknowledged within a minute")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return float64(len(msgs)) / time.Since(t).Seconds(), nil
}

// deliverRate is broker.Deliver's rate over msgs with a copy of this
// program as the consumer, and its publishing's alone (from the history:
// the first invoke to the last publish's answer).
func deliverRate(ctx context.Context, dir, exe string, msgs []broker.Message) (deliver, publish float64, err error) {
	br, err := bnats.Start(ctx, broker.Options{Dir: dir})
	if err != nil {
		return 0, 0, err
	}
	defer br.Close(context.WithoutCancel(ctx))
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	t := time.Now()
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   br,
		Consumer: broker.Consumer{Command: []string{exe}, Env: map[string]string{consumerEnv: "nats"}},
		Messages: msgs, Recorder: history.NewWriter(f), Scenario: "bench-consumers", Seed: 1,
		Effects: func(context.Context) ([]history.Effect, error) { return nil, nil },
		Drain:   2 * time.Minute,
	})
	el := time.Since(t).Seconds()
	if err != nil {
		return 0, 0, err
	}
	if !st.Drained || st.Acks != len(msgs) {
		return 0, 0, fmt.Errorf("the bench consumer acknowledged %d of %d messages", st.Acks, len(msgs))
	}
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	pub, err := publishSpan(path)
	if err != nil {
		return 0, 0, err
	}
	return float64(len(msgs)) / el, float64(len(msgs)) / pub, nil
}

// publishSpan is how long a consumer run's publishing took, in seconds:
// from its first invoke to the last publish's answer (the ack events come
// after).
func publishSpan(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := history.NewReader(f)
	var e history.Event
	var first, lastOK int64 = -1, 0
	for {
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		switch e.Type {
		case history.TypeInvoke:
			if first < 0 {
				first = e.NS
			}
		case history.TypeOK:
			lastOK = e.NS
		}
	}
	if first < 0 || lastOK <= first {
		return 0, errors.New("the consumer run's history records no publish")
	}
	return time.Duration(lastOK - first).Seconds(), nil
}

// rabbitStart times one throwaway RabbitMQ node's start, in a directory
// the rabbitmq user can enter when the bench runs as root.
func rabbitStart(ctx context.Context, dir string) (float64, error) {
	if err := os.Chmod(dir, 0o711); err != nil {
		return 0, err
	}
	t := time.Now()
	br, err := rabbitmq.Start(ctx, broker.Options{Dir: filepath.Join(dir, "rabbitmq")})
	if err != nil {
		return 0, err
	}
	el := time.Since(t).Seconds()
	return el, br.Close(context.WithoutCancel(ctx))
}

func (r *Report) consumersMD(p printer) {
	c := r.Consumers
	if c == nil {
		return
	}
	p("## The consumer's path (issue 25)")
	p("")
	p("%d rounds, each: an embedded NATS JetStream broker started (and closed, not timed); the NATS Go client publishing %s messages "+
		"asynchronously alone to a broker of its own, every ack awaited; idemchaos's consumer run of the same %s messages on another "+
		"(`broker.Deliver`, as a consumer scenario runs it: each message published and recorded to a history file, delivered through "+
		"the consumers' hop to a consumer process — a copy of this program that pulls and acknowledges each — its ack recorded; timed "+
		"from the first publish to the history flushed, the consumer's start included); a throwaway RabbitMQ node from Debian's binaries "+
		"started until ready (READY=1, its quorum queue declared, the harness connected) and closed.", c.Rounds, count(c.Messages), count(c.Messages))
	p("")
	p("| figure | wanted | median | min | max | |")
	p("|---|---|---|---|---|---|")
	p("| embedded NATS JetStream start | ≤ %.0f ms | %.1f ms | %.1f ms | %.1f ms | %s |", targetNATSStart*1000, c.NATSStart.Median*1000, c.NATSStart.Min*1000, c.NATSStart.Max*1000,
		metIf(c.NATSStart.Median <= targetNATSStart, fmt.Sprintf("%.1f ms over", (c.NATSStart.Median-targetNATSStart)*1000)))
	p("| NATS Go client, async publish alone | | %s msg/s | %s | %s | |", rate(c.ClientAsync.Median), rate(c.ClientAsync.Min), rate(c.ClientAsync.Max))
	p("| idemchaos publish → deliver → record | | %s msg/s | %s | %s | |", rate(c.Deliver.Median), rate(c.Deliver.Min), rate(c.Deliver.Max))
	p("| of which its publishing alone (each publish awaits JetStream's answer) | | %s msg/s | %s | %s | |", rate(c.Publish.Median), rate(c.Publish.Min), rate(c.Publish.Max))
	if c.ClientAsync.Median > 0 {
		dr := c.Deliver.Median / c.ClientAsync.Median
		p("| publish → deliver → record / the client's async publish | ≥ %.1f× | %.2f× | | | %s |", targetDeliverRate, dr,
			metIf(dr >= targetDeliverRate, fmt.Sprintf("%.0f%% short", (1-dr/targetDeliverRate)*100)))
		p("| publishing alone / the client's async publish | | %.2f× | | | |", c.Publish.Median/c.ClientAsync.Median)
	}
	if c.RabbitErr != "" {
		p("| RabbitMQ node ready | ≤ %.0f s | not measured: %s | | | |", targetRabbitStart, oneLine(c.RabbitErr))
	} else {
		p("| RabbitMQ node ready | ≤ %.0f s | %.2f s | %.2f s | %.2f s | %s |", targetRabbitStart, c.RabbitStart.Median, c.RabbitStart.Min, c.RabbitStart.Max,
			metIf(c.RabbitStart.Median <= targetRabbitStart, fmt.Sprintf("%.2f s over", c.RabbitStart.Median-targetRabbitStart)))
	}
	p("")
}

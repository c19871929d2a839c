package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// The faults on the delivery path [Deliver] applies, one per run, aimed at
// one message ([Config.Target]).
const (
	// FaultKillBeforeAck holds the first ack of the target message on the
	// consumers' link, waits until the oracle sees the message's effect,
	// SIGKILLs every consumer instance and drops the ack: the broker
	// delivers the message again to the restarted consumers once its ack
	// wait runs out.
	FaultKillBeforeAck = "kill-before-ack"
	// FaultKillAfterAck SIGKILLs every consumer instance as soon as the
	// target message's first ack reaches the consumers' link, then lets
	// the ack through to the broker: a consumer that acknowledges before
	// its effect is committed dies with the message acknowledged and not
	// applied.
	FaultKillAfterAck = "kill-after-ack"
	// FaultPublishTwiceSameID publishes the target message a second time
	// as a retrying producer would, with the same broker dedupe id: the
	// broker's dedupe window drops the copy.
	FaultPublishTwiceSameID = "publish-twice-same-id"
	// FaultPublishTwiceNewID publishes it again under a new dedupe id (a
	// producer that makes one per attempt): the broker stores it twice,
	// and only the consumer's own dedupe by business id can save it.
	FaultPublishTwiceNewID = "publish-twice-new-id"
	// FaultPoisonMessage publishes the target message with a body no
	// consumer can apply: valid JSON of the plan's shape, its amount
	// [PoisonAmount], larger than a 32-bit integer (an int column, an
	// int32 field). Its fault event names the publish by op: it is
	// expected to have no effect, and to be set aside (terminated,
	// dead-lettered) within the bound, not redelivered for ever nor
	// block the messages behind it (bounded-redelivery).
	FaultPoisonMessage = "poison-message"
	// FaultBrokerRestart restarts the broker process ([Restarter]) as soon
	// as the broker has seen the target message's ack: its store survives,
	// the consumers' connections die and reconnect, and the acks in
	// flight while it is down are lost with them (those messages are
	// delivered again). Nothing the broker acknowledged is lost.
	FaultBrokerRestart = "broker-restart"
)

// PoisonAmount is the amount of the poison-message fault's body: valid
// JSON, larger than int32 (2,147,483,647).
const PoisonAmount int64 = 9_999_999_999

// Consumer is the user's consumer: a command the harness starts, once per
// instance, with the broker's [Broker.Env] in its environment.
type Consumer struct {
	Command   []string
	Instances int               // 0 = 1
	Env       map[string]string // added to the harness's environment
	Dir       string            // working directory ("" = the harness's)
	// Log receives the instances' stdout and stderr (nil: discarded).
	Log io.Writer
}

// Config is one consumer run.
type Config struct {
	Broker   Broker
	Consumer Consumer
	Messages []Message
	// Fault is one of the Fault constants ("" for none), aimed at
	// Messages[Target].
	Fault  string
	Target int
	// Effects reads the effects the consumer produced (the scenario's
	// oracle), each with the business key as Key.
	Effects func(ctx context.Context) ([]history.Effect, error)
	// Recorder receives the run's history; Scenario and Seed go into its
	// meta event.
	Recorder *history.Writer
	Scenario string
	Seed     int64
	// Drain bounds the wait for every stored message to be acknowledged
	// (0 = 30s).
	Drain time.Duration
	// Invariants and Contract go into the meta event: the checks the run
	// is judged by (nil: exactly-once and no-lost-message, and
	// bounded-redelivery under the poison-message fault) and the
	// contract (its max_deliveries).
	Invariants []string
	Contract   *history.Contract
}

// Stats is what a consumer run did, as the broker reported it.
type Stats struct {
	Published  int // publishes the broker stored
	Duplicates int // publishes its dedupe window dropped
	Acks       int
	// Redelivered counts the acks of deliveries after the first (the
	// broker's delivery count in the ack above 1).
	Redelivered int
	// Killed is how many instances the fault SIGKILLed; KillAfter is the
	// time from the held ack to the kill (the oracle seeing the effect in
	// between).
	Killed    int
	KillAfter time.Duration
	// Drained says every stored message was acknowledged in time (under
	// poison-message: every other one, and the poison set aside or given
	// up on by the broker).
	Drained bool
	// Naks counts the consumers' negative acknowledgements.
	Naks int
	// PoisonDeliveries is the broker's count of the poison message's
	// deliveries at the run's end (poison-message, with a broker that
	// counts them).
	PoisonDeliveries uint64
	// Restarts and RestartTook are the broker restarts (broker-restart)
	// and how long the last one took, from the old process's stop to the
	// new one's readiness.
	Restarts    int
	RestartTook time.Duration
}

// Messages is the plan of n messages for seed: intent ids, business keys
// and bodies, the same for the same seed.
func Messages(seed int64, n int) []Message {
	rng := rand.New(rand.NewPCG(uint64(seed), 25))
	out := make([]Message, n)
	for i := range out {
		id := fmt.Sprintf("m-%d-%d", seed, i+1)
		key := fmt.Sprintf("order-%d-%d", seed, i+1)
		body, _ := json.Marshal(map[string]any{"order": key, "amount": 100 + rng.IntN(9900)})
		out[i] = Message{Intent: id, Key: key, Body: body, DedupeID: id}
	}
	return out
}

// poisonBody is m's body as the poison-message fault publishes it.
func poisonBody(m Message) []byte {
	b, _ := json.Marshal(map[string]any{"order": m.Key, "amount": PoisonAmount})
	return b
}

// run is one Deliver's state.
type run struct {
	cfg   Config
	start time.Time
	rec   *history.Writer
	mu    sync.Mutex
	procs []*exec.Cmd
	// done says the run stopped its consumers for good: a restart after
	// a kill that comes later starts nothing (no process outlives a run).
	done  bool
	bySeq map[uint64]Message
	// restartErr is the broker-restart fault's failure, if it failed;
	// restarting is the restart under way, waited for before the run
	// stops its consumers and reads the broker.
	restartErr error
	restarting sync.WaitGroup
}

func (r *run) ns() int64 { return time.Since(r.start).Nanoseconds() }

func (r *run) write(e *history.Event) error {
	if r.rec == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Write(e)
}

// Deliver runs the user's consumer on the broker: it publishes the plan's
// messages (recorded as attempts, the broker's answer as their outcome),
// starts the consumer instances, applies the fault, waits until the broker
// has seen every stored message acknowledged, stops the consumers (SIGTERM,
// so that one finishes the message in hand), reads the effects and records
// the broker's acks and the effects. The history is then judged by
// exactly-once (per message, by business key) and no-lost-message.
func Deliver(ctx context.Context, cfg Config) (st Stats, err error) {
	if len(cfg.Consumer.Command) == 0 {
		return st, errors.New("broker: no consumer command")
	}
	if cfg.Effects == nil {
		return st, errors.New("broker: no effect oracle")
	}
	if cfg.Target < 0 || (cfg.Fault != "" && cfg.Target >= len(cfg.Messages)) {
		return st, fmt.Errorf("broker: target message %d of %d", cfg.Target, len(cfg.Messages))
	}
	if _, ok := cfg.Broker.(Restarter); cfg.Fault == FaultBrokerRestart && !ok {
		return st, fmt.Errorf("broker: %s cannot be restarted in place (no Restart): no %s fault on it", cfg.Broker.Kind(), FaultBrokerRestart)
	}
	r := &run{cfg: cfg, start: time.Now(), rec: cfg.Recorder, bySeq: map[uint64]Message{}}
	// A restart under way when the run fails ends before Deliver returns
	// (and its caller closes the broker).
	defer r.restarting.Wait()
	invariants := cfg.Invariants
	if invariants == nil {
		invariants = DefaultInvariants(cfg.Fault)
	}
	if err := r.write(&history.Event{Type: history.TypeMeta, V: history.Version, Scenario: cfg.Scenario, Seed: cfg.Seed,
		Started: r.start.UTC().Format(time.RFC3339), EffectsRecorded: true,
		Invariants: invariants, Contract: cfg.Contract}); err != nil {
		return st, err
	}
	if err := r.publish(ctx, &st); err != nil {
		return st, err
	}
	switch cfg.Fault {
	case FaultKillBeforeAck, FaultKillAfterAck:
		r.armKill(ctx, &st)
		defer cfg.Broker.OnAck(nil)
	case FaultBrokerRestart:
		r.armRestart(ctx, &st)
		defer cfg.Broker.OnAck(nil)
	}
	defer r.stopAll()
	for i := range max(cfg.Consumer.Instances, 1) {
		if err := r.startInstance(i); err != nil {
			return st, err
		}
	}
	st.Drained, err = r.drain(ctx)
	if err != nil {
		return st, err
	}
	r.restarting.Wait()
	cfg.Broker.OnAck(nil)
	r.stopAll()
	r.mu.Lock()
	rerr := r.restartErr
	r.mu.Unlock()
	if rerr != nil {
		return st, rerr
	}
	return st, r.record(ctx, &st)
}

// DefaultInvariants are the checks a consumer run under the fault is
// judged by when none are named: exactly-once and no-lost-message, and
// bounded-redelivery under poison-message.
func DefaultInvariants(fault string) []string {
	if fault == FaultPoisonMessage {
		return []string{"exactly-once", "no-lost-message", "bounded-redelivery"}
	}
	return []string{"exactly-once", "no-lost-message"}
}

func (r *run) publish(ctx context.Context, st *Stats) error {
	op, dedupe := int64(0), "Nats-Msg-Id"
	if n, ok := r.cfg.Broker.(DedupeNamer); ok {
		dedupe = n.DedupeName()
	}
	send := func(m Message, attempt int) error {
		op++
		inv := &history.Event{Type: history.TypeInvoke, Op: op, Intent: m.Intent, Key: m.Key, Attempt: attempt, NS: r.ns(),
			Req: &history.Request{Method: "PUBLISH", Path: "broker", Body: m.Body,
				Headers: history.Headers{{Name: HeaderIntent, Value: m.Intent}, {Name: dedupe, Value: m.DedupeID}}}}
		if err := r.write(inv); err != nil {
			return err
		}
		p, err := r.cfg.Broker.Publish(ctx, m)
		if err != nil {
			_ = r.write(&history.Event{Type: history.TypeFail, Op: op, NS: r.ns(), Error: err.Error()})
			return err
		}
		if p.Duplicate {
			st.Duplicates++
		} else {
			st.Published++
			r.bySeq[p.Seq] = m
		}
		// 202: the broker took the message; its delivery is the
		// consumer's affair from here on.
		return r.write(&history.Event{Type: history.TypeOK, Op: op, NS: r.ns(), Resp: &history.Response{Status: 202}})
	}
	for i, m := range r.cfg.Messages {
		if i == r.cfg.Target && r.cfg.Fault == FaultPoisonMessage {
			// Aimed at the publish by its op: that message is expected
			// to have no effect.
			m.Body = poisonBody(m)
			d, _ := json.Marshal(map[string]any{"message": m.Intent, "amount": PoisonAmount})
			if err := r.write(&history.Event{Type: history.TypeFault, Fault: FaultPoisonMessage, Action: "fire", Op: op + 1, NS: r.ns(), Detail: d}); err != nil {
				return err
			}
		}
		if err := send(m, 1); err != nil {
			return err
		}
		if i != r.cfg.Target {
			continue
		}
		switch r.cfg.Fault {
		case FaultPublishTwiceSameID:
			if err := r.fault("producer-retry", map[string]any{"message": m.Intent, "dedupe_id": "same"}); err != nil {
				return err
			}
			if err := send(m, 2); err != nil {
				return err
			}
		case FaultPublishTwiceNewID:
			if err := r.fault("producer-retry", map[string]any{"message": m.Intent, "dedupe_id": "new"}); err != nil {
				return err
			}
			again := m
			again.DedupeID = m.DedupeID + "-retry"
			if err := send(again, 2); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run) fault(kind string, detail map[string]any) error {
	d, _ := json.Marshal(detail)
	return r.write(&history.Event{Type: history.TypeFault, Fault: kind, Action: "fire", NS: r.ns(), Detail: d})
}

// armKill sets the ack hook of the kill faults: the target's first ack is
// held (FaultKillBeforeAck: until the oracle sees its effect), every
// instance is killed, and the ack is dropped (before) or let through
// (after); the instances are started again.
func (r *run) armKill(ctx context.Context, st *Stats) {
	target := r.cfg.Messages[r.cfg.Target]
	var once sync.Once
	r.cfg.Broker.OnAck(func(a Ack) bool {
		if r.bySeq[a.Seq].Intent != target.Intent || !a.Settles() {
			return true
		}
		pass := true
		once.Do(func() {
			held := time.Now()
			before := r.cfg.Fault == FaultKillBeforeAck
			if before && !r.waitEffect(ctx, target, 10*time.Second) {
				return // no effect to kill after: the ack goes on
			}
			st.KillAfter = time.Since(held)
			st.Killed = r.killAll()
			_ = r.fault("consumer-kill", map[string]any{"message": target.Intent, "signal": "SIGKILL", "instances": st.Killed,
				"ack": map[bool]string{true: "dropped", false: "delivered"}[before], "after_ms": float64(st.KillAfter.Microseconds()) / 1000})
			pass = !before
			go func() { // the consumers come back, as a supervisor restarts them
				for i := range max(r.cfg.Consumer.Instances, 1) {
					_ = r.startInstance(i)
				}
				d, _ := json.Marshal(map[string]any{"instances": st.Killed})
				_ = r.write(&history.Event{Type: history.TypeFault, Fault: "consumer-kill", Action: "heal", NS: r.ns(), Detail: d})
			}()
		})
		return pass
	})
}

// waitEffect polls the oracle until m's effect shows (the oracle has no
// signal of its own), false when none did within d.
func (r *run) waitEffect(ctx context.Context, m Message, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		effs, err := r.cfg.Effects(ctx)
		if err == nil {
			for _, e := range effs {
				if e.Intent == m.Intent || (e.Intent == "" && e.Key == m.Key) {
					return true
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

func (r *run) startInstance(i int) error {
	c := r.cfg.Consumer
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	for k, v := range r.cfg.Broker.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "IDEMCHAOS_CONSUMER_INSTANCE="+strconv.Itoa(i))
	if c.Log != nil {
		cmd.Stdout, cmd.Stderr = c.Log, c.Log
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("broker: start consumer %d: %w", i, err)
	}
	r.procs = append(r.procs, cmd)
	return nil
}

// killAll SIGKILLs every running instance and reaps it.
func (r *run) killAll() int {
	r.mu.Lock()
	procs := r.procs
	r.procs = nil
	r.mu.Unlock()
	for _, p := range procs {
		_ = p.Process.Kill()
	}
	for _, p := range procs {
		_ = p.Wait()
	}
	return len(procs)
}

// stopAll asks every instance to stop (SIGTERM, or a kill where there is
// no such signal) and waits up to 10s before killing it.
func (r *run) stopAll() {
	r.mu.Lock()
	procs := r.procs
	r.procs, r.done = nil, true
	r.mu.Unlock()
	for _, p := range procs {
		if err := p.Process.Signal(terminate); err != nil {
			_ = p.Process.Kill()
		}
	}
	for _, p := range procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
}

// drain waits until every stored message has an ack (or a terminate; a
// nak settles nothing). Under poison-message the poison message is done
// too when the broker gave up on it or dead-lettered it.
func (r *run) drain(ctx context.Context) (bool, error) {
	d := r.cfg.Drain
	if d <= 0 {
		d = 30 * time.Second
	}
	deadline := time.Now().Add(d)
	counter, counts := r.cfg.Broker.(DeliveryCounter)
	for {
		acks, err := r.cfg.Broker.Acks(ctx)
		if err != nil {
			return false, err
		}
		done := map[uint64]bool{}
		for _, a := range acks {
			done[a.Seq] = done[a.Seq] || a.Settles()
		}
		if r.cfg.Fault == FaultPoisonMessage && counts {
			ds, err := counter.Deliveries(ctx)
			if err != nil {
				return false, err
			}
			for _, dl := range ds {
				done[dl.Seq] = done[dl.Seq] || dl.Kind != ""
			}
		}
		all := true
		for seq := range r.bySeq {
			all = all && done[seq]
		}
		if all {
			return true, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// record writes the broker's acks, the oracle's read and the effects.
func (r *run) record(ctx context.Context, st *Stats) error {
	acks, err := r.cfg.Broker.Acks(ctx)
	if err != nil {
		return err
	}
	for _, a := range acks {
		m := r.bySeq[a.Seq]
		kind := ""
		switch a.Kind {
		case AckKindTerm, AckKindNak:
			kind = a.Kind
		}
		if a.Settles() {
			st.Acks++
			if a.Delivered > 1 {
				st.Redelivered++
			}
		} else {
			st.Naks++
		}
		if err := r.write(&history.Event{Type: history.TypeAck, Intent: m.Intent, Key: m.Key, Attempt: int(a.Delivered), Kind: kind, NS: r.ns()}); err != nil {
			return err
		}
	}
	if err := r.recordDeliveries(ctx, st); err != nil {
		return err
	}
	effs, err := r.cfg.Effects(ctx)
	if err != nil {
		_ = r.write(&history.Event{Type: history.TypeEnvironment, Error: "the effect oracle could not be read: " + err.Error(), NS: r.ns()})
		return err
	}
	if err := r.write(&history.Event{Type: history.TypeOracle, Source: "effects", Read: len(effs), NS: r.ns()}); err != nil {
		return err
	}
	for _, e := range effs {
		if err := r.write(&history.Event{Type: history.TypeEffect, Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Effect: e.ID, Kind: e.Kind, NS: r.ns(), Resource: e.Resource, State: e.State, WrittenAt: e.WrittenAt}); err != nil {
			return err
		}
	}
	if r.rec != nil {
		return r.rec.Flush()
	}
	return nil
}

// recordDeliveries writes the broker's delivery count of each message it
// delivered (delivery events), when it counts them.
func (r *run) recordDeliveries(ctx context.Context, st *Stats) error {
	counter, ok := r.cfg.Broker.(DeliveryCounter)
	if !ok {
		return nil
	}
	ds, err := counter.Deliveries(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(ds, func(a, b Delivery) int { return cmp.Compare(a.Seq, b.Seq) })
	var poison string
	if r.cfg.Fault == FaultPoisonMessage {
		poison = r.cfg.Messages[r.cfg.Target].Intent
	}
	for _, d := range ds {
		m, ok := r.bySeq[d.Seq]
		if !ok || d.Count == 0 {
			continue
		}
		if m.Intent == poison {
			st.PoisonDeliveries = max(st.PoisonDeliveries, d.Count)
		}
		if err := r.write(&history.Event{Type: history.TypeDelivery, Intent: m.Intent, Key: m.Key, Deliveries: int(d.Count), Kind: d.Kind, NS: r.ns()}); err != nil {
			return err
		}
	}
	return nil
}

// armRestart sets the ack hook of broker-restart: once the target's first
// settling ack has passed and the broker has seen it, the broker process
// is restarted. An ack that meets the link while the broker is down is
// held until it is up again and then dropped, cutting that consumer's
// link: it was in flight to a process that no longer exists.
func (r *run) armRestart(ctx context.Context, st *Stats) {
	target := r.cfg.Messages[r.cfg.Target]
	var (
		once sync.Once
		mu   sync.Mutex
		down chan struct{} // non-nil from the restart's start, closed at its end
		over bool
	)
	r.cfg.Broker.OnAck(func(a Ack) bool {
		mu.Lock()
		d, done := down, over
		mu.Unlock()
		switch {
		case done:
			return true
		case d != nil:
			<-d
			return false
		case r.bySeq[a.Seq].Intent != target.Intent || !a.Settles():
			return true
		}
		once.Do(func() {
			ch := make(chan struct{})
			mu.Lock()
			down = ch
			mu.Unlock()
			r.restarting.Add(1)
			go func() {
				defer r.restarting.Done()
				defer func() {
					mu.Lock()
					over = true
					mu.Unlock()
					close(ch)
				}()
				r.restart(ctx, a.Seq, st)
			}()
		})
		return true
	})
}

// restart waits until the broker has seen the ack of seq, then restarts
// it, recording the fault's fire and heal.
func (r *run) restart(ctx context.Context, seq uint64, st *Stats) {
	fail := func(err error) {
		r.mu.Lock()
		r.restartErr = err
		r.mu.Unlock()
	}
	deadline := time.Now().Add(10 * time.Second)
	for seen := false; !seen; {
		acks, err := r.cfg.Broker.Acks(ctx)
		if err != nil {
			fail(err)
			return
		}
		seen = slices.ContainsFunc(acks, func(a Ack) bool { return a.Seq == seq && a.Settles() })
		if !seen && (time.Now().After(deadline) || ctx.Err() != nil) {
			fail(fmt.Errorf("broker: %s: the broker never saw the target's ack, so it was not restarted", FaultBrokerRestart))
			return
		}
		if !seen {
			time.Sleep(time.Millisecond) // the broker's ack list has no signal of its own
		}
	}
	target := r.cfg.Messages[r.cfg.Target].Intent
	if err := r.fault(FaultBrokerRestart, map[string]any{"message": target, "broker": r.cfg.Broker.Kind()}); err != nil {
		fail(err)
		return
	}
	began := time.Now()
	if err := r.cfg.Broker.(Restarter).Restart(ctx); err != nil {
		fail(fmt.Errorf("broker: %s: %w", FaultBrokerRestart, err))
		return
	}
	st.RestartTook = time.Since(began)
	st.Restarts++
	d, _ := json.Marshal(map[string]any{"broker": r.cfg.Broker.Kind(), "restart_ms": float64(st.RestartTook.Microseconds()) / 1000})
	_ = r.write(&history.Event{Type: history.TypeFault, Fault: FaultBrokerRestart, Action: "heal", NS: r.ns(), Detail: d})
}

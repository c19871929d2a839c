package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
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
)

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
	// Drained says every stored message was acknowledged in time.
	Drained bool
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
	r := &run{cfg: cfg, start: time.Now(), rec: cfg.Recorder, bySeq: map[uint64]Message{}}
	if err := r.write(&history.Event{Type: history.TypeMeta, V: history.Version, Scenario: cfg.Scenario, Seed: cfg.Seed,
		Started: r.start.UTC().Format(time.RFC3339), EffectsRecorded: true,
		Invariants: []string{"exactly-once", "no-lost-message"}}); err != nil {
		return st, err
	}
	if err := r.publish(ctx, &st); err != nil {
		return st, err
	}
	if cfg.Fault == FaultKillBeforeAck || cfg.Fault == FaultKillAfterAck {
		r.armKill(ctx, &st)
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
	cfg.Broker.OnAck(nil)
	r.stopAll()
	return st, r.record(ctx, &st)
}

func (r *run) publish(ctx context.Context, st *Stats) error {
	op := int64(0)
	send := func(m Message, attempt int) error {
		op++
		inv := &history.Event{Type: history.TypeInvoke, Op: op, Intent: m.Intent, Key: m.Key, Attempt: attempt, NS: r.ns(),
			Req: &history.Request{Method: "PUBLISH", Path: "broker", Body: m.Body,
				Headers: history.Headers{{Name: HeaderIntent, Value: m.Intent}, {Name: "Nats-Msg-Id", Value: m.DedupeID}}}}
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
		if r.bySeq[a.Seq].Intent != target.Intent {
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

// drain waits until every stored message has an ack (or a terminate).
func (r *run) drain(ctx context.Context) (bool, error) {
	d := r.cfg.Drain
	if d <= 0 {
		d = 30 * time.Second
	}
	deadline := time.Now().Add(d)
	for {
		acks, err := r.cfg.Broker.Acks(ctx)
		if err != nil {
			return false, err
		}
		done := map[uint64]bool{}
		for _, a := range acks {
			done[a.Seq] = true
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
		st.Acks++
		if a.Delivered > 1 {
			st.Redelivered++
		}
		kind := ""
		if a.Kind == "term" {
			kind = "term"
		}
		if err := r.write(&history.Event{Type: history.TypeAck, Intent: m.Intent, Key: m.Key, Attempt: int(a.Delivered), Kind: kind, NS: r.ns()}); err != nil {
			return err
		}
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
		if err := r.write(&history.Event{Type: history.TypeEffect, Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Effect: e.ID, Kind: e.Kind, NS: r.ns()}); err != nil {
			return err
		}
	}
	if r.rec != nil {
		return r.rec.Flush()
	}
	return nil
}

package redis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/idemchaos/idemchaos/harness/broker"
	bredis "github.com/idemchaos/idemchaos/harness/broker/redis"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/proctest"
)

// envMode makes the test binary a harness that starts a broker, prints
// its server's pid and waits to be killed.
const envMode = "IDEMCHAOS_REDIS_TEST_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(envMode) == "harness" {
		b, err := bredis.Start(context.Background(), broker.Options{Dir: os.Getenv("IDEMCHAOS_REDIS_TEST_DIR")})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Println("SERVER", bredis.PID(b))
		select {}
	}
	os.Exit(m.Run())
}

func start(t testing.TB, opts broker.Options) *bredis.Broker {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	b, err := bredis.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return b
}

// client connects as a user's consumer would, from the environment the
// broker gives it: through the consumers' link.
func client(t testing.TB, b *bredis.Broker) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(b.Env()[bredis.EnvURL])
	if err != nil {
		t.Fatal(err)
	}
	// No retries: a command on a link the hop cut fails, as it does for
	// a consumer that died there, instead of going again on a new one.
	opt.MaxRetries = -1
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// direct connects to the server itself, past the link.
func direct(t testing.TB, b *bredis.Broker) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// read takes one new entry for consumer name, failing the test if none
// comes within 10s.
func read(t *testing.T, c *goredis.Client, name string) goredis.XMessage {
	t.Helper()
	s, err := c.XReadGroup(context.Background(), &goredis.XReadGroupArgs{Group: bredis.Group, Consumer: name,
		Streams: []string{bredis.Stream, ">"}, Count: 1, Block: 10 * time.Second}).Result()
	if err != nil {
		t.Fatalf("XREADGROUP: %v", err)
	}
	if len(s) != 1 || len(s[0].Messages) != 1 {
		t.Fatalf("XREADGROUP: %v, want one entry", s)
	}
	return s[0].Messages[0]
}

// claim takes over the entries idle longer than the ack wait for
// consumer name, as a consumer keeping the contract does, polling (there
// is no signal for an entry's idle time) until one comes or 10s pass.
func claim(t *testing.T, c *goredis.Client, name string, minIdle time.Duration) goredis.XMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		msgs, _, err := c.XAutoClaim(context.Background(), &goredis.XAutoClaimArgs{Stream: bredis.Stream, Group: bredis.Group,
			Consumer: name, MinIdle: minIdle, Start: "0", Count: 1}).Result()
		if err != nil {
			t.Fatalf("XAUTOCLAIM: %v", err)
		}
		if len(msgs) == 1 {
			return msgs[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no entry became claimable within 10s")
	return goredis.XMessage{}
}

func TestStart_LoopbackOnlyAndDurable(t *testing.T) {
	dir := t.TempDir()
	b := start(t, broker.Options{Dir: dir, AckWait: 750 * time.Millisecond, MaxDeliver: 4})
	for _, raw := range []string{b.URL(), b.Env()[bredis.EnvURL]} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if u.Hostname() != "127.0.0.1" {
			t.Errorf("%s: want loopback", raw)
		}
	}
	env := b.Env()
	if env[bredis.EnvStream] != bredis.Stream || env[bredis.EnvGroup] != bredis.Group ||
		env[bredis.EnvAckWaitMS] != "750" || env[bredis.EnvMaxDeliver] != "4" {
		t.Errorf("env = %v", env)
	}
	if env[bredis.EnvURL] == b.URL() {
		t.Errorf("the consumer is pointed at the server itself (%s), not at its link", b.URL())
	}
	// The server's configuration: what makes a restart lose nothing, and
	// nothing written outside the run's directory.
	ctx := context.Background()
	want := map[string]string{"appendonly": "yes", "appendfsync": "always", "save": "", "protected-mode": "yes", "dir": dir, "bind": "127.0.0.1"}
	for k, v := range want {
		got, err := direct(t, b).ConfigGet(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got[k] != v {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir")); err != nil {
		t.Errorf("no append-only file in the run's directory: %v", err)
	}
	_, err := bredis.Start(ctx, broker.Options{Dir: t.TempDir(), Listen: "0.0.0.0:0"})
	if !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Errorf("listening on every interface without --allow-remote: err = %v, want ErrNotLoopback", err)
	}
	if _, ok := broker.Lookup(bredis.Kind); !ok {
		t.Errorf("kind %q not registered: %v", bredis.Kind, broker.Kinds())
	}
	if _, err := bredis.Start(ctx, broker.Options{}); err == nil || !strings.Contains(err.Error(), "Options.Dir") {
		t.Errorf("no directory: err = %v", err)
	}
}

// An entry read and never acknowledged stays pending until a consumer
// claims it; each claim is a delivery the broker counts, and the ack the
// harness records carries that count.
func TestRedelivery_BrokerCountsTheClaims(t *testing.T) {
	ackWait := 200 * time.Millisecond
	b := start(t, broker.Options{AckWait: ackWait})
	ctx := context.Background()
	p, err := b.Publish(ctx, broker.Message{Intent: "i-1", Key: "order-1", Body: []byte(`{"n":1}`), DedupeID: "i-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, b)
	first := read(t, c, "a") // not acknowledged: consumer a "died"
	if first.Values[broker.HeaderIntent] != "i-1" || first.Values[broker.HeaderKey] != "order-1" || first.Values[bredis.FieldBody] != `{"n":1}` {
		t.Fatalf("entry fields = %v", first.Values)
	}
	again := claim(t, c, "b", ackWait) // delivery 2
	third := claim(t, c, "c", ackWait) // delivery 3
	if again.ID != first.ID || third.ID != first.ID {
		t.Fatalf("claimed %s and %s, want %s", again.ID, third.ID, first.ID)
	}
	if n, err := b.Pending(ctx); err != nil || n != 1 {
		t.Errorf("pending before the ack = %d, %v; want 1", n, err)
	}
	if err := c.XAck(ctx, bredis.Stream, bredis.Group, third.ID).Err(); err != nil {
		t.Fatal(err)
	}
	acks, err := b.Acks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 1 || acks[0].Seq != p.Seq || acks[0].Delivered != 3 || acks[0].Kind != "ack" {
		t.Fatalf("acks = %+v, want one ack of seq %d at delivery 3", acks, p.Seq)
	}
	if n, err := b.Pending(ctx); err != nil || n != 0 {
		t.Errorf("pending after the ack = %d, %v; want 0", n, err)
	}
	// An XACK of an entry no longer pending acknowledges nothing: the
	// server says 0 and no ack is recorded.
	if n, err := c.XAck(ctx, bredis.Stream, bredis.Group, third.ID).Result(); err != nil || n != 0 {
		t.Fatalf("second XACK = %d, %v", n, err)
	}
	if acks, _ := b.Acks(ctx); len(acks) != 1 {
		t.Errorf("a second XACK of the same entry was recorded: %+v", acks)
	}
}

// Redis has no dedupe window: the same message published twice, with the
// same dedupe id, is two entries.
func TestPublishTwice_NoDedupe(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	m := broker.Message{Intent: "i-1", Key: "order-1", Body: []byte("x"), DedupeID: "m-1"}
	a, err := b.Publish(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	same, err := b.Publish(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if a.Duplicate || same.Duplicate || same.Seq == a.Seq {
		t.Errorf("publishes %+v and %+v: want two entries, neither a duplicate", a, same)
	}
	if n, err := b.Pending(ctx); err != nil || n != 2 {
		t.Errorf("pending = %d, %v; want 2: one intent, stored twice", n, err)
	}
	c := client(t, b)
	for range 2 {
		e := read(t, c, "a")
		if e.Values[broker.HeaderIntent] != "i-1" {
			t.Errorf("intent field = %v, want i-1 on both copies", e.Values[broker.HeaderIntent])
		}
	}
}

// The hook sees an XACK before the server does: while it holds, the entry
// stays pending; let through, the server applies it; dropped, the link is
// cut and the entry stays pending.
func TestOnAck_HoldPassDrop(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	for i := range 2 {
		if _, err := b.Publish(ctx, broker.Message{Intent: fmt.Sprint("i-", i), Key: "k", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	held, release := make(chan broker.Ack, 1), make(chan bool)
	b.OnAck(func(a broker.Ack) bool { held <- a; return <-release })
	c := client(t, b)
	e := read(t, c, "a")
	done := make(chan error, 1)
	go func() { done <- c.XAck(ctx, bredis.Stream, bredis.Group, e.ID).Err() }()
	a := <-held
	if a.Delivered != 1 || a.Seq != 1 {
		t.Errorf("held ack %+v, want seq 1 at delivery 1", a)
	}
	if n, _ := b.Pending(ctx); n != 2 {
		t.Errorf("pending while the ack is held = %d, want 2", n)
	}
	release <- true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, _ := b.Pending(ctx); n != 1 {
		t.Errorf("pending after the ack went on = %d, want 1", n)
	}
	e2 := read(t, c, "a")
	go func() { done <- c.XAck(ctx, bredis.Stream, bredis.Group, e2.ID).Err() }()
	<-held
	release <- false
	if err := <-done; err == nil {
		t.Error("a dropped ack's XACK succeeded: the link was not cut")
	}
	b.OnAck(nil)
	if n, _ := b.Pending(ctx); n != 1 {
		t.Errorf("pending after the ack was dropped = %d, want 1", n)
	}
	if acks, _ := b.Acks(ctx); len(acks) != 1 || acks[0].Seq != 1 {
		t.Errorf("acks = %+v, want only seq 1's", acks)
	}
}

// A consumer killed as its XACK leaves (kill-after-ack) still has the ack
// applied and recorded: the link waits for the server's reply.
func TestOnAck_ClientGoneAfterAck(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	if _, err := b.Publish(ctx, broker.Message{Intent: "i-1", Key: "k", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	c := client(t, b)
	e := read(t, c, "a")
	b.OnAck(func(broker.Ack) bool { _ = c.Close(); return true }) // the consumer dies; its ack goes on
	_ = c.XAck(ctx, bredis.Stream, bredis.Group, e.ID).Err()
	deadline := time.Now().Add(10 * time.Second)
	for {
		acks, err := b.Acks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(acks) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ack of a consumer gone after its XACK was not recorded: %+v", acks)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n, _ := b.Pending(ctx); n != 0 {
		t.Errorf("pending = %d, want 0: the ack reached the server", n)
	}
}

// An XACK inside MULTI/EXEC is recorded from EXEC's reply.
func TestOnAck_InTransaction(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	for i := range 2 {
		if _, err := b.Publish(ctx, broker.Message{Intent: fmt.Sprint("i-", i), Key: "k", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, b)
	e1, e2 := read(t, c, "a"), read(t, c, "a")
	if _, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "seen", "1", 0)
		p.XAck(ctx, bredis.Stream, bredis.Group, e1.ID, e2.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	acks, _ := b.Acks(ctx)
	if len(acks) != 2 || acks[0].Seq != 1 || acks[1].Seq != 2 {
		t.Errorf("acks = %+v, want seq 1 and 2", acks)
	}
}

// Restarting the server (SIGKILL, then the same port and directory) loses
// nothing: the entries, the group, its pending list and delivery counts
// are as before, and consumers go on through the same link.
func TestRestart_LosesNothing(t *testing.T) {
	ackWait := 200 * time.Millisecond
	b := start(t, broker.Options{AckWait: ackWait})
	ctx := context.Background()
	for i := range 5 {
		if _, err := b.Publish(ctx, broker.Message{Intent: fmt.Sprint("i-", i), Key: fmt.Sprint("k-", i), Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, b)
	e1, e2, _ := read(t, c, "a"), read(t, c, "a"), read(t, c, "a")
	if got := claim(t, c, "b", ackWait); got.ID != e1.ID { // e1 at delivery 2
		t.Fatalf("claimed %s, want the oldest idle entry %s", got.ID, e1.ID)
	}
	if err := c.XAck(ctx, bredis.Stream, bredis.Group, e2.ID).Err(); err != nil {
		t.Fatal(err)
	}
	d := direct(t, b)
	state := func() string {
		t.Helper()
		entries, err := d.XRange(ctx, bredis.Stream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		pending, err := d.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: bredis.Stream, Group: bredis.Group, Start: "-", End: "+", Count: 100}).Result()
		if err != nil {
			t.Fatal(err)
		}
		groups, err := d.XInfoGroups(ctx, bredis.Stream).Result()
		if err != nil {
			t.Fatal(err)
		}
		var s strings.Builder
		fmt.Fprintf(&s, "entries %v\n", entries)
		for _, g := range groups {
			// Not the entries-read counter nor the lag it gives: Redis
			// 7.0's append-only file does not keep them (they come back
			// unknown), and they are derived, not data.
			fmt.Fprintf(&s, "group %s consumers %d pending %d last delivered %s\n", g.Name, g.Consumers, g.Pending, g.LastDeliveredID)
		}
		for _, p := range pending {
			fmt.Fprintf(&s, "pending %s %s delivered %d\n", p.ID, p.Consumer, p.RetryCount)
		}
		return s.String()
	}
	before := state()
	if !strings.Contains(before, e1.ID+" b delivered 2") {
		t.Fatalf("no pending entries to compare: %s", before)
	}
	pid := bredis.PID(b)
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if bredis.PID(b) == pid {
		t.Fatal("Restart did not start a new server")
	}
	proctest.WaitGone(t, pid, 10*time.Second, fmt.Sprintf("the killed redis-server %d still runs", pid))
	// Idle times go on counting; compare everything else.
	if after := state(); after != before {
		t.Errorf("state after the restart differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n, err := b.Pending(ctx); err != nil || n != 4 {
		t.Errorf("pending after the restart = %d, %v; want 4 (2 delivered, 2 not yet)", n, err)
	}
	if _, err := b.Publish(ctx, broker.Message{Intent: "i-5", Key: "k-5", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	c2 := client(t, b)
	e := read(t, c2, "a")
	if e.Values[broker.HeaderIntent] != "i-3" {
		t.Errorf("after the restart the next new entry is %v, want i-3", e.Values)
	}
}

// Close stops the server and reaps it.
func TestClose_LeavesNoServer(t *testing.T) {
	b, err := bredis.Start(context.Background(), broker.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pid := bredis.PID(b)
	if !proctest.Alive(pid) {
		t.Fatalf("redis-server %d not running after Start", pid)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if proctest.Alive(pid) {
		t.Errorf("redis-server %d still runs after Close", pid)
	}
}

// A harness killed with SIGKILL takes its redis-server with it.
func TestKilledHarness_LeavesNoServer(t *testing.T) {
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), envMode+"=harness", "IDEMCHAOS_REDIS_TEST_DIR="+t.TempDir())
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Process.Kill(); _ = h.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the harness: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "SERVER")))
	if err != nil {
		t.Fatalf("the harness said %q", line)
	}
	if !proctest.Alive(pid) {
		t.Fatalf("redis-server %d not running", pid)
	}
	if err := h.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.Wait()
	proctest.WaitGone(t, pid, 10*time.Second, fmt.Sprintf("redis-server %d survived its SIGKILLed harness", pid))
}

// BenchmarkStart measures a throwaway redis-server's start: the process,
// its append-only file, the harness's connection, the stream and group
// and the consumers' link, to its close.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		br, err := bredis.Start(ctx, broker.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := br.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkPublish measures the harness's publish (each XADD waits for
// the server's answer, fsynced to the append-only file first).
func BenchmarkPublish(b *testing.B) {
	br := start(b, broker.Options{})
	ctx := context.Background()
	body := []byte(`{"amount":100}`)
	for b.Loop() {
		if _, err := br.Publish(ctx, broker.Message{Intent: "i", Key: "k", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// An XACK that went on and got no reply (the server died between its
// fsync and its answer) is read back: an entry no longer pending was
// acknowledged by it, one still pending was not.
func TestAcks_UnansweredReadBack(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	for i := range 2 {
		if _, err := b.Publish(ctx, broker.Message{Intent: fmt.Sprint("i-", i), Key: "k", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, b)
	e1, _ := read(t, c, "a"), read(t, c, "a")
	// Applied past the link: what the server did with the unanswered one.
	if err := direct(t, b).XAck(ctx, bredis.Stream, bredis.Group, e1.ID).Err(); err != nil {
		t.Fatal(err)
	}
	bredis.Orphan(b, broker.Ack{Seq: 1, Delivered: 1, Kind: "ack"}, broker.Ack{Seq: 2, Delivered: 1, Kind: "ack"})
	acks, err := b.Acks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 1 || acks[0].Seq != 1 {
		t.Errorf("acks = %+v, want seq 1's alone (seq 2 is still pending)", acks)
	}
	if again, _ := b.Acks(ctx); len(again) != 1 {
		t.Errorf("read back twice: %+v", again)
	}
}

// The server's own count of an entry's deliveries, as Deliveries reports
// it: an entry read and acknowledged once counts 1 (read back from the
// ack), one never acknowledged and claimed three more times counts 4 (the
// pending list's times-delivered), and the count survives a restart of
// the server (its append-only file). Redis has no nak and never gives up
// on an entry: no kind.
func TestDeliveries_CountsTheClaims(t *testing.T) {
	b := start(t, broker.Options{AckWait: time.Second})
	ctx := context.Background()
	var seqs []uint64
	for _, m := range broker.Messages(1, 2) {
		p, err := b.Publish(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, p.Seq)
	}
	c := client(t, b)
	first, _ := read(t, c, "a"), read(t, c, "a")
	if err := c.XAck(ctx, bredis.Stream, bredis.Group, first.ID).Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		claim(t, c, "b", 0)
	}
	want := []broker.Delivery{{Seq: seqs[0], Count: 1}, {Seq: seqs[1], Count: 4}}
	if got, err := b.Deliveries(ctx); err != nil || !slices.Equal(got, want) {
		t.Fatalf("deliveries = %+v (%v), want %+v", got, err, want)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Deliveries(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("after a restart: deliveries = %+v (%v), want %+v", got, err, want)
	}
}

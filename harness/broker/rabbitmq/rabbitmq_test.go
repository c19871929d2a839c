package rabbitmq_test

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// dir is a directory the rabbitmq user can reach (a t.TempDir is root's
// and 0700): the broker's own directory goes inside.
func dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rabbitmq-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return filepath.Join(d, "node")
}

func start(t testing.TB, opts broker.Options) *rabbitmq.Broker {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = dir(t)
	}
	b, err := rabbitmq.Start(context.Background(), opts)
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

// comm is a process's command name.
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

func comms(pids []int) []string {
	var out []string
	for _, p := range pids {
		out = append(out, comm(p))
	}
	slices.Sort(out)
	return out
}

// listeners lists the TCP addresses the processes listen on, read from
// /proc (their socket inodes, matched in /proc/net/tcp and tcp6).
func listeners(t *testing.T, pids []int) []netip.AddrPort {
	t.Helper()
	inodes := map[string]bool{}
	for _, p := range pids {
		fds, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/fd/*")
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var out []netip.AddrPort
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			host, port, _ := strings.Cut(f[1], ":")
			raw, err := hex.DecodeString(host)
			if err != nil {
				t.Fatalf("%s: %q", file, f[1])
			}
			for i := 0; i+4 <= len(raw); i += 4 { // each 32-bit word is in host (little-endian) order
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			ip, _ := netip.AddrFromSlice(raw)
			n, _ := strconv.ParseUint(port, 16, 16)
			out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(n)))
		}
	}
	return out
}

// Two nodes at once (runs overlap), each on ports of its own, every
// listener of each (AMQP, distribution, epmd) on loopback; a node refused
// on every interface without --allow-remote.
func TestStart_OverlappingNodesOnLoopback(t *testing.T) {
	var (
		wg sync.WaitGroup
		bs [2]*rabbitmq.Broker
	)
	for i := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := rabbitmq.Start(context.Background(), broker.Options{Dir: dir(t)})
			if err != nil {
				t.Error(err)
				return
			}
			bs[i] = b
			t.Cleanup(func() { _ = b.Close(context.Background()) })
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seen := map[uint16]int{}
	for i, b := range bs {
		amqpAddr, dist, epmd := rabbitmq.Ports(b)
		pids := rabbitmq.Processes(b)
		names := comms(pids)
		if !slices.Contains(names, "beam.smp") || !slices.Contains(names, "epmd") {
			t.Errorf("node %d: processes %v, want its beam.smp and its own epmd", i, names)
		}
		got := listeners(t, pids)
		var ports []uint16
		for _, a := range got {
			if !a.Addr().IsLoopback() {
				t.Errorf("node %d listens on %s: not loopback", i, a)
			}
			ports = append(ports, a.Port())
			seen[a.Port()]++
		}
		_, p, _ := net.SplitHostPort(amqpAddr)
		for _, want := range []string{p, strconv.Itoa(dist), strconv.Itoa(epmd)} {
			n, _ := strconv.ParseUint(want, 10, 16)
			if !slices.Contains(ports, uint16(n)) {
				t.Errorf("node %d: no listener on port %s (AMQP %s, distribution %d, epmd %d); listens on %v", i, want, amqpAddr, dist, epmd, got)
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(ports)))) != 3 {
			t.Errorf("node %d listens on %v: want the AMQP, distribution and epmd ports only (no plugin's)", i, got)
		}
		if bs[0].Node() == bs[1].Node() {
			t.Errorf("both nodes are named %s", bs[0].Node())
		}
	}
	for port, n := range seen {
		if n > 2 { // epmd listens on 127.0.0.1 and ::1, one port
			t.Errorf("port %d is shared by the two nodes", port)
		}
	}
	if _, ok := broker.Lookup(rabbitmq.Kind); !ok {
		t.Errorf("kind %q not registered: %v", rabbitmq.Kind, broker.Kinds())
	}
	_, err := rabbitmq.Start(context.Background(), broker.Options{Dir: dir(t), Listen: "0.0.0.0:0"})
	if !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Errorf("a node on every interface without --allow-remote: err = %v, want ErrNotLoopback", err)
	}
}

// nodeProcesses lists the live processes started for the node whose
// directory is d (each inherits HOME=<d>/home): what a failed start, which
// returns no Broker to ask, may have left.
func nodeProcesses(d string) []int {
	want := []byte("\x00HOME=" + filepath.Join(d, "home") + "\x00")
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err == nil && strings.Contains("\x00"+string(env), string(want)) && !strings.Contains(string(st), ") Z") {
			out = append(out, pid)
		}
	}
	return out
}

// A node that fails to boot (its AMQP port is taken: the VM exits before
// READY=1) is a clear error, and the failed start stops what it started —
// its epmd and anything of the VM's — rather than panicking in its cleanup
// (the deferred stop once read the nil node the failed start returned).
func TestStart_FailedBootStopsWhatItStarted(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	d := dir(t)
	b, err := rabbitmq.Start(context.Background(), broker.Options{Dir: d, Listen: taken.Addr().String()})
	if err == nil {
		_ = b.Close(context.Background())
		t.Fatalf("a node on taken port %s started", taken.Addr())
	}
	if !strings.Contains(err.Error(), "before it was ready") {
		t.Errorf("err = %v, want the node's exit before it was ready", err)
	}
	if left := nodeProcesses(d); len(left) > 0 {
		t.Errorf("after the failed start, processes %v (%v) of the node survive", left, comms(left))
	}
}

// Close leaves no process of the node: its VM, its epmd, and what the VM
// started in sessions of their own.
func TestClose_ReapsTheNode(t *testing.T) {
	b := start(t, broker.Options{})
	before := rabbitmq.Processes(b)
	if len(before) < 3 {
		t.Fatalf("node processes %v (%v): want at least beam.smp, erl_child_setup and epmd", before, comms(before))
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := rabbitmq.Processes(b); len(left) > 0 {
		t.Errorf("after Close, processes %v (%v) of the node survive", left, comms(left))
	}
	for _, p := range before {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil && comm(p) != "" {
			if st, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); !strings.Contains(string(st), ") Z") {
				t.Errorf("process %d (%s) of the node survives Close", p, comm(p))
			}
		}
	}
}

// A node whose VM was SIGKILLed (the harness's child, dead under it):
// Close still leaves nothing, its epmd included.
func TestClose_AfterTheVMWasKilled(t *testing.T) {
	b := start(t, broker.Options{})
	if err := rabbitmq.KillNode(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if names := comms(rabbitmq.Processes(b)); !slices.Contains(names, "epmd") {
		t.Fatalf("after the VM's kill, processes %v: its epmd should still run (so that Close has something to reap)", names)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := rabbitmq.Processes(b); len(left) > 0 {
		t.Errorf("after Close, processes %v (%v) of the node survive", left, comms(left))
	}
}

// dialConsumer connects as a user's consumer does, from the broker's
// environment: through the hop.
func dialConsumer(t *testing.T, b *rabbitmq.Broker) (*amqp.Connection, <-chan amqp.Delivery) {
	t.Helper()
	env := b.Env()
	conn, err := amqp.Dial(env[rabbitmq.EnvURL])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(env[rabbitmq.EnvQueue], "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, ds
}

func next(t *testing.T, ds <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case d, ok := <-ds:
		if !ok {
			t.Fatal("the consumer's channel closed")
		}
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery within 30s")
	}
	return amqp.Delivery{}
}

// A delivery whose consumer's connection dies unacknowledged is delivered
// again, and the quorum queue counts it (x-delivery-count): the ack the
// harness records carries the broker's count.
func TestRedelivery_BrokerCountsIt(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	p, err := b.Publish(ctx, broker.Message{Intent: "i-1", Key: "order-1", Body: []byte(`{"n":1}`), DedupeID: "m-1"})
	if err != nil {
		t.Fatal(err)
	}
	conn, ds := dialConsumer(t, b)
	first := next(t, ds)
	if first.Headers[broker.HeaderIntent] != "i-1" || first.Headers[broker.HeaderKey] != "order-1" || first.MessageId != "m-1" {
		t.Fatalf("first delivery: headers %v, message_id %q; want the intent, the key and the dedupe id", first.Headers, first.MessageId)
	}
	if _, ok := first.Headers["x-delivery-count"]; ok || first.Redelivered {
		t.Errorf("first delivery counted as a redelivery: %v, redelivered %v", first.Headers, first.Redelivered)
	}
	_ = conn.Close() // the consumer "died" before its ack
	_, ds = dialConsumer(t, b)
	again := next(t, ds)
	if !again.Redelivered || again.Headers["x-delivery-count"] != int64(1) {
		t.Fatalf("second delivery: redelivered %v, headers %v; want x-delivery-count 1", again.Redelivered, again.Headers)
	}
	if err := again.Ack(false); err != nil {
		t.Fatal(err)
	}
	acks := waitAcks(t, b, 1)
	if acks[0].Seq != p.Seq || acks[0].Delivered != 2 || acks[0].Kind != "ack" {
		t.Fatalf("acks = %+v, want one ack of seq %d at delivery 2", acks, p.Seq)
	}
	if n, err := b.Pending(ctx); err != nil || n != 0 {
		t.Errorf("pending after the ack = %d, %v; want 0", n, err)
	}
}

// waitAcks waits until the hop has passed n settlements to the node (the
// consumer's Ack returns once the frame is written, not once it arrived).
func waitAcks(t *testing.T, b *rabbitmq.Broker, n int) []broker.Ack {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		acks, err := b.Acks(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(acks) >= n {
			return acks
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acks within 30s, want %d: %+v", len(acks), n, acks)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A retrying producer's second publish with the same message_id: RabbitMQ
// has no dedupe, so the queue holds the message twice, each copy numbered
// apart by the harness.
func TestPublishTwice_NoDedupe(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	m := broker.Message{Intent: "i-1", Key: "order-1", Body: []byte("x"), DedupeID: "m-1"}
	a, err := b.Publish(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Publish(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if a.Duplicate || again.Duplicate || a.Seq == again.Seq {
		t.Errorf("same message_id twice: %+v then %+v, want two stored copies", a, again)
	}
	if n, err := b.Pending(ctx); err != nil || n != 2 {
		t.Errorf("queue holds %d (%v), want 2: one intent, stored twice", n, err)
	}
	_, ds := dialConsumer(t, b)
	for range 2 {
		d := next(t, ds)
		if d.Headers[broker.HeaderIntent] != "i-1" || d.MessageId != "m-1" {
			t.Errorf("copy: headers %v message_id %q, want i-1 and m-1 on both", d.Headers, d.MessageId)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
	acks := waitAcks(t, b, 2)
	if acks[0].Seq == acks[1].Seq {
		t.Errorf("both copies acked as seq %d: the hop cannot tell them apart", acks[0].Seq)
	}
}

// BenchmarkStart measures a throwaway node's start: the VM's boot to
// READY=1, the queue declared and the harness connected, to its close
// (issue #25's target: ≤ 5 s on this machine).
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		br, err := rabbitmq.Start(ctx, broker.Options{Dir: dir(b)})
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

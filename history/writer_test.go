package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

func sampleEvents() []history.Event {
	return []history.Event{
		{Type: history.TypeMeta, V: 1, Scenario: "response-drop", Seed: 42, Started: "2026-11-30T00:00:00Z", EffectsRecorded: true,
			Contract: &history.Contract{Profile: "custom", MissingKey: 0, Reuse: 400, InFlight: 425, Fingerprint: "canonical",
				ReplayHeaders: []string{"Location"}, ReplayIgnore: []string{}, DecisionBoundMS: 9000, RetentionGapMS: 1, MaxKeyLength: 50},
			Invariants: []string{"exactly-once", "replay-identical"}, Mode: history.ModeClient,
			ClientContract: &history.ClientContract{Budget: 5, GlobalBudget: 90, RetryStatuses: []int{429, 503}, PermanentStatuses: []int{},
				MinBackoffMS: 20, Jitter: "optional", Unknown: "forbidden"}},
		{Type: history.TypeStep, Name: "double clicks", Expect: "in-flight-conflict", NS: 100},
		{Type: history.TypeAck, Intent: "i7", Key: "order-7", Attempt: 2, Kind: "term", NS: 110},
		{Type: history.TypeInvoke, Op: 17, Intent: "i42", Tenant: "t1", Key: "k-9", Attempt: 2, Client: 3, NS: 123,
			Req: &history.Request{Method: "POST", Path: "/v1/orders",
				Headers: history.Headers{{Name: "Idempotency-Key", Value: "k-9"}, {Name: "Content-Type", Value: "application/json"}},
				Body:    []byte(`{"sku":"A-100","note":"quote \" back\\slash\nnewline \u0001 ü <script>"}`)}},
		{Type: history.TypeOK, Op: 17, NS: 456, Resp: &history.Response{Status: 201,
			Headers: history.Headers{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"id":"o-1"}`)}},
		{Type: history.TypeInvoke, Op: 18, Tenant: "t1", Key: "k-10", Attempt: 1, NS: 500,
			Req: &history.Request{Method: "POST", Path: "/v1/orders", Body: []byte{0xff, 0x00, 0xfe, 'a'}}},
		{Type: history.TypeOK, Op: 18, NS: 600, Resp: &history.Response{Status: 200, Body: []byte{0xc3, 0x28}}},
		{Type: history.TypeOK, Op: 19, NS: 601, Resp: &history.Response{Status: 200, Body: []byte{}}},
		{Type: history.TypeInfo, Op: 20, NS: 789, Error: "timeout after 500ms"},
		{Type: history.TypeFail, Op: 21, NS: 790, Error: "connection refused"},
		{Type: history.TypeFault, Fault: "response-drop", Op: 17, NS: 400, Detail: []byte(`{"proxy":"p17"}`)},
		{Type: history.TypeFault, Fault: "crash", Action: "heal", NS: 401},
		{Type: history.TypeEffect, Tenant: "t1", Key: "k-9", Intent: "i42", Effect: "order 9912", NS: 900},
		{Type: history.TypeEffect, Tenant: "t1", Key: "k-9", Effect: "x", Kind: "notification", NS: 901},
		{Type: history.TypeBudget, MaxRequests: 200, NS: 902},
		{Type: history.TypeOracle, Source: "GET http://127.0.0.1:8080/orders", Read: 0, Got: `200 {"orders":[]}`, NS: 903},
		{Type: history.TypeOracle, Source: "query SELECT 1", Read: 3, NS: 904},
		{Type: history.TypeEnvironment, Error: "the disk is full", NS: 905},
		{Type: history.TypeInvocation, Intent: "i-3", Tenant: "t1", NS: 906, Action: "start", Body: []byte(`{"sku":"a"}`)},
		{Type: history.TypeInvocation, Intent: "i-4", NS: 906, Body: []byte{0xff}},
		{Type: history.TypeInvoke, Op: 22, Intent: "i-3", Tenant: "t1", Key: "k", Listener: "127.0.0.1:40123", Attempt: 1, NS: 907},
		{Type: history.TypeOK, Op: 22, NS: 908, By: "proxy", Forwarded: false, RetryAfterMS: 1000, Resp: &history.Response{Status: 429}},
		{Type: history.TypeInfo, Op: 23, NS: 909, By: "proxy", Forwarded: true, Error: "reset after execution"},
		{Type: history.TypeOK, Op: 24, NS: 910, RetryAfterMS: 2000, Resp: &history.Response{Status: 503}},
		{Type: history.TypeBelief, Intent: "i-3", NS: 911, Belief: history.BeliefSuccess, Exit: 0, Resource: "ord_12"},
		{Type: history.TypeBelief, Intent: "i-4", NS: 912, Belief: history.BeliefFailure, Exit: -1, Error: "killed at timeout 30s"},
	}
}

func TestWriter_RoundTripsEveryField(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	in := sampleEvents()
	for i := range in {
		if err := w.Write(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"body_b64":"/wD+YQ=="`) {
		t.Errorf("binary body not written as body_b64:\n%s", buf.String())
	}
	r := history.NewReader(&buf)
	for i := range in {
		var got history.Event
		if err := r.Next(&got); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		want := in[i]
		if !reflect.DeepEqual(normal(got), normal(want)) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, normal(got), normal(want))
		}
	}
	var e history.Event
	if err := r.Next(&e); !errors.Is(err, io.EOF) {
		t.Fatalf("after last event: got %v, want io.EOF", err)
	}
}

// normal makes nil and empty slices compare equal, and drops the default action.
func normal(e history.Event) history.Event {
	if e.Action == "fire" {
		e.Action = ""
	}
	for _, b := range []*[]byte{reqBody(&e), respBody(&e)} {
		if b != nil && *b != nil && len(*b) == 0 {
			*b = []byte{}
		}
	}
	return e
}

func reqBody(e *history.Event) *[]byte {
	if e.Req == nil {
		return nil
	}
	return &e.Req.Body
}

func respBody(e *history.Event) *[]byte {
	if e.Resp == nil {
		return nil
	}
	return &e.Resp.Body
}

func TestHeaders_GetIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	h := history.Headers{{Name: "Content-Type", Value: "text/plain"}}
	if v, ok := h.Get("content-type"); !ok || v != "text/plain" {
		t.Fatalf("Get(content-type) = %q, %v", v, ok)
	}
	if _, ok := h.Get("Retry-After"); ok {
		t.Fatal("Get(Retry-After) found a header that is not there")
	}
}

// Many goroutines write at once (the driver's clients do): every event
// lands whole on its own line, none lost, none interleaved with another,
// bodies larger than the reused encoding buffers included.
func TestWriter_ConcurrentWritesStayWhole(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	const writers, each = 8, 300
	big := strings.Repeat("b", 70<<10)
	if err := w.Write(&history.Event{Type: history.TypeMeta, V: history.Version}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for g := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				body := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				if i%100 == 7 {
					body = big
				}
				e := history.Event{Type: history.TypeInvoke, Op: int64(g*each + i + 1), Key: fmt.Sprintf("k-%d-%d", g, i), NS: int64(i),
					Req: &history.Request{Method: "POST", Path: "/v1/orders", Body: []byte(body)}}
				if err := w.Write(&e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := history.NewReader(&buf)
	seen := map[int64]bool{}
	for {
		var e history.Event
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("line %d: %v", r.Line(), err)
		}
		if e.Type == history.TypeMeta {
			continue
		}
		g, i := (e.Op-1)/each, (e.Op-1)%each
		want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
		if i%100 == 7 {
			want = big
		}
		if seen[e.Op] || e.Key != fmt.Sprintf("k-%d-%d", g, i) || string(e.Req.Body) != want {
			t.Fatalf("op %d: duplicate or torn event (key %q, body of %d bytes)", e.Op, e.Key, len(e.Req.Body))
		}
		seen[e.Op] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("read %d events, wrote %d", len(seen), writers*each)
	}
}

// The writer never writes a line the reader would refuse (issue #22): an
// event past MaxLineBytes stops the writer with an error, and the file
// holds only readable lines.
func TestWriter_NeverWritesALineTooLong(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	ok := &history.Event{Type: history.TypeInvoke, Op: 1, Tenant: "t1", Key: "k"}
	if err := w.Write(ok); err != nil {
		t.Fatal(err)
	}
	big := &history.Event{Type: history.TypeOK, Op: 1, Resp: &history.Response{Status: 201, Body: bytes.Repeat([]byte{0}, history.MaxLineBytes/6+1)}}
	if err := w.Write(big); err == nil || !strings.Contains(err.Error(), "longer than a history line may be") {
		t.Fatalf("Write of a %d-byte body escaped six times: %v", len(big.Resp.Body), err)
	}
	_ = w.Flush()
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 1 {
		t.Fatalf("%d lines written, want the one that fits", n)
	}
}

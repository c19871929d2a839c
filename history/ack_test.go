package history_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// A broker's acks load with the delivery count it reported, and a step's
// history holds only the acks seen by its end.
func TestLoad_Acks(t *testing.T) {
	t.Parallel()
	in := `{"type":"meta","v":1,"scenario":"s","seed":1}
{"type":"step","name":"a","expect":"clean","ns":1}
{"type":"ack","key":"order-1","intent":"m1","attempt":1,"ns":5}
{"type":"step","name":"b","expect":"clean","ns":10}
{"type":"ack","key":"order-2","intent":"m2","attempt":3,"kind":"term","ns":15}
`
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Acks) != 2 || h.Acks[1] != (history.Ack{Key: "order-2", Intent: "m2", Delivered: 3, Term: true, NS: 15}) {
		t.Fatalf("acks = %+v", h.Acks)
	}
	if h.Skipped != 0 {
		t.Errorf("skipped %d events: the ack type is not read", h.Skipped)
	}
	if got := h.Through(0).Acks; len(got) != 1 || got[0].Intent != "m1" {
		t.Errorf("first step's acks = %+v, want m1's alone", got)
	}
}

// A nak loads as a nak that settles nothing (and acknowledges no state),
// delivery events load with the broker's count and kind, a step holds
// only the delivery counts written by its end, and the writer writes
// both back as read, with the contract's max_deliveries.
func TestLoad_NaksAndDeliveries(t *testing.T) {
	t.Parallel()
	in := `{"type":"meta","v":1,"scenario":"s","seed":1,"contract":{"profile":"ietf","missing_key":0,"reuse":422,"in_flight":409,"max_deliveries":4}}
{"type":"step","name":"a","expect":"clean","ns":1}
{"type":"ack","key":"order-1","intent":"m1","attempt":1,"kind":"nak","ns":5,"resource":"order-1","state":"paid"}
{"type":"delivery","key":"order-1","intent":"m1","deliveries":4,"kind":"exhausted","ns":6}
{"type":"step","name":"b","expect":"clean","ns":10}
{"type":"delivery","key":"order-2","intent":"m2","deliveries":1,"ns":15}
`
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Acks) != 1 || !h.Acks[0].Nak || h.Acks[0].Term || h.Acks[0].Settles() {
		t.Fatalf("acks = %+v, want one nak that settles nothing", h.Acks)
	}
	if len(h.Transitions) != 0 {
		t.Errorf("transitions = %+v: a nak acknowledges no state", h.Transitions)
	}
	want := []history.Delivery{{Key: "order-1", Intent: "m1", Count: 4, Kind: history.DeliveryExhausted, NS: 6}, {Key: "order-2", Intent: "m2", Count: 1, NS: 15}}
	if len(h.Deliveries) != 2 || h.Deliveries[0] != want[0] || h.Deliveries[1] != want[1] {
		t.Fatalf("deliveries = %+v, want %+v", h.Deliveries, want)
	}
	if h.Skipped != 0 {
		t.Errorf("skipped %d events: the delivery type is not read", h.Skipped)
	}
	if h.Meta.Contract == nil || h.Meta.Contract.MaxDeliveries != 4 {
		t.Errorf("contract = %+v, want max_deliveries 4", h.Meta.Contract)
	}
	if got := h.Through(0).Deliveries; len(got) != 1 || got[0].Intent != "m1" {
		t.Errorf("first step's deliveries = %+v, want m1's alone", got)
	}
	var b strings.Builder
	w := history.NewWriter(&b)
	for _, e := range []history.Event{
		{Type: history.TypeMeta, V: 1, Scenario: "s", Seed: 1, Contract: &history.Contract{Profile: "ietf", Reuse: 422, InFlight: 409, MaxDeliveries: 4}},
		{Type: history.TypeAck, Key: "order-1", Intent: "m1", Attempt: 2, Kind: "nak", NS: 5},
		{Type: history.TypeDelivery, Key: "order-1", Intent: "m1", Deliveries: 4, Kind: history.DeliveryExhausted, NS: 6},
	} {
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	back, err := history.Load(strings.NewReader(b.String()), history.LoadOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if back.Meta.Contract.MaxDeliveries != 4 || len(back.Acks) != 1 || !back.Acks[0].Nak || len(back.Deliveries) != 1 || back.Deliveries[0] != want[0] {
		t.Errorf("written and read back: %+v %+v %+v\n%s", back.Meta.Contract, back.Acks, back.Deliveries, b.String())
	}
}

// A delivery event without its message, count or with an unknown kind is
// refused with the reason.
func TestLoad_BadDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{`{"type":"delivery","deliveries":3,"ns":1}`, `"intent" or "key"`},
		{`{"type":"delivery","intent":"m1","ns":1}`, `deliveries`},
		{`{"type":"delivery","intent":"m1","deliveries":-1,"ns":1}`, `must not be negative`},
		{`{"type":"delivery","intent":"m1","deliveries":3,"kind":"gone","ns":1}`, `"gone"`},
	} {
		_, err := history.Load(strings.NewReader(`{"type":"meta","v":1,"scenario":"s","seed":1}`+"\n"+tc.line+"\n"), history.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %s", tc.line, err, tc.want)
		}
	}
}

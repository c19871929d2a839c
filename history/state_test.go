package history_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// An effect's state, resource and written-at, an invoke's and an ack's
// transition, a later state read and the contract's declared order are
// written and read back as they were; a step keeps only what it saw.
func TestLoad_StatesRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 7, 0, 1, 250000000, time.UTC)
	events := []history.Event{
		{Type: history.TypeMeta, V: 1, Scenario: "s", Contract: &history.Contract{Profile: "ietf", States: []string{"created", "paid"}}},
		{Type: history.TypeStep, Name: "a", NS: 1},
		{Type: history.TypeInvoke, Op: 1, Intent: "evt_1", Tenant: "provider", Key: "evt_1", NS: 2, Resource: "payment pay_1", State: "paid",
			Req: &history.Request{Method: "POST", Path: "/hook", Body: []byte(`{}`)}},
		{Type: history.TypeOK, Op: 1, NS: 3, Resp: &history.Response{Status: 200}},
		{Type: history.TypeAck, Intent: "m1", Key: "o1", Attempt: 1, NS: 4, Resource: "order o1", State: "created"},
		{Type: history.TypeEffect, Tenant: "provider", Key: "evt_1", Effect: "payment pay_1", NS: 5, State: "paid", WrittenAt: at},
		{Type: history.TypeStep, Name: "b", NS: 10},
		{Type: history.TypeState, Tenant: "provider", Resource: "payment pay_1", State: "created", WrittenAt: at.Add(time.Second), NS: 11},
	}
	var b []byte
	for i := range events {
		b = append(history.AppendEvent(b, &events[i]), '\n')
	}
	h, err := history.Load(strings.NewReader(string(b)), history.LoadOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got := h.Meta.Contract.States; len(got) != 2 || got[1] != "paid" {
		t.Errorf("contract states = %v", got)
	}
	if len(h.Effects) != 1 || h.Effects[0].State != "paid" || !h.Effects[0].WrittenAt.Equal(at) || h.Effects[0].Resource != "" {
		t.Errorf("effects = %+v", h.Effects)
	}
	want := []history.Transition{
		{Op: 1, Intent: "evt_1", Tenant: "provider", Resource: "payment pay_1", State: "paid", NS: 2},
		{Acked: true, Intent: "m1", Resource: "order o1", State: "created", NS: 4},
	}
	if len(h.Transitions) != 2 || h.Transitions[0] != want[0] || h.Transitions[1] != want[1] {
		t.Errorf("transitions = %+v, want %+v", h.Transitions, want)
	}
	if len(h.States) != 1 || h.States[0].State != "created" || !h.States[0].WrittenAt.Equal(at.Add(time.Second)) {
		t.Errorf("states = %+v", h.States)
	}
	if first := h.Through(0); len(first.States) != 0 || len(first.Transitions) != 2 {
		t.Errorf("the first step holds %d state reads and %d transitions, want 0 and 2", len(first.States), len(first.Transitions))
	}
	for _, bad := range []string{
		`{"type":"effect","effect":"payment 1","resource":"payment 1"}`,
		`{"type":"effect","effect":"payment 1","state":"paid","written_at":"yesterday"}`,
		`{"type":"state","tenant":"t","state":"paid"}`,
	} {
		if _, err := history.Load(strings.NewReader(`{"type":"meta","v":1}`+"\n"+bad+"\n"), history.LoadOptions{}); err == nil {
			t.Errorf("%s: loaded, want an error", bad)
		}
	}
}

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

package checkers_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

func loadLines(t *testing.T, lines ...string) *history.History {
	t.Helper()
	h, err := history.Load(strings.NewReader(strings.Join(lines, "\n")+"\n"), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNoLostMessage(t *testing.T) {
	t.Parallel()
	meta := `{"type":"meta","v":1,"scenario":"consumer","seed":1,"effects_recorded":true}`
	c, err := checkers.ByName("no-lost-message")
	if err != nil {
		t.Fatalf("no-lost-message is not registered: %v", err)
	}
	// Both messages acknowledged; m1's effect names its key only, m2's
	// its intent: both found.
	clean := loadLines(t, meta,
		`{"type":"ack","key":"order-1","intent":"m1","attempt":1,"ns":5}`,
		`{"type":"ack","key":"order-2","intent":"m2","attempt":2,"ns":6}`,
		`{"type":"effect","key":"order-1","effect":"order 1","ns":7}`,
		`{"type":"effect","key":"order-2","intent":"m2","effect":"order 2","ns":8}`)
	if r := c.Check(clean, clean.Effects); r.Verdict != checkers.Pass || r.Checked != 2 {
		t.Errorf("every acked message applied: %v (checked %d) %v", r.Verdict, r.Checked, r.Violations)
	}
	// m2 acknowledged at its first delivery and never applied.
	lost := loadLines(t, meta,
		`{"type":"ack","key":"order-1","intent":"m1","attempt":1,"ns":5}`,
		`{"type":"ack","key":"order-2","intent":"m2","attempt":1,"ns":6}`,
		`{"type":"effect","key":"order-1","effect":"order 1","ns":7}`)
	r := c.Check(lost, lost.Effects)
	if r.Verdict != checkers.Violated || len(r.Violations) != 1 || r.Violations[0].Intent != "m2" ||
		!strings.Contains(r.Violations[0].Cause, "ack before effect") {
		t.Fatalf("lost message: %v %+v", r.Verdict, r.Violations)
	}
	// No acks: nothing of a consumer to judge, a pass that says so.
	none := loadLines(t, meta, `{"type":"effect","key":"order-1","effect":"order 1","ns":7}`)
	if r := c.Check(none, none.Effects); r.Verdict != checkers.Pass || r.Reason == "" {
		t.Errorf("no acks: %v %q", r.Verdict, r.Reason)
	}
	// Effects not read: unknown, never a pass.
	unread := loadLines(t, `{"type":"meta","v":1,"scenario":"consumer","seed":1,"effects_recorded":false}`,
		`{"type":"ack","key":"order-1","intent":"m1","attempt":1,"ns":5}`)
	if r := c.Check(unread, unread.Effects); r.Verdict != checkers.Unknown {
		t.Errorf("effects unread: %v, want unknown", r.Verdict)
	}
}

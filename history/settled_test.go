package history_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// A settled event holds every attempt that ended info before it open until
// it (its server-side work may have run until then); answered attempts end
// at their answer, and an info attempt after the last settle at its info
// event. The loader reads the writer's line, and Through
// keeps only a step's own settles.
func TestSettled_HoldsTimedOutAttemptsOpen(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	if err := w.Write(&history.Event{Type: history.TypeSettled, NS: 900}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(buf.String()); got != `{"type":"settled","ns":900}` {
		t.Fatalf("writer: %s", got)
	}
	src := `{"type":"meta","v":1}
{"type":"step","name":"one","ns":1}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":10,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"info","op":1,"ns":250,"error":"timeout after 240ns"}
{"type":"invoke","op":2,"intent":"i1","tenant":"t1","key":"k1","ns":260,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"ok","op":2,"ns":300,"resp":{"status":201,"body":"{}"}}
` + buf.String() + `{"type":"step","name":"two","ns":1000}
{"type":"invoke","op":3,"intent":"i2","tenant":"t1","key":"k2","ns":1010,"req":{"method":"POST","path":"/o","body":"b"}}
{"type":"info","op":3,"ns":1250,"error":"timeout"}
`
	h, err := history.Load(strings.NewReader(src), history.LoadOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(h.Settled) != 1 || h.Settled[0] != 900 {
		t.Fatalf("settled %v, want [900]", h.Settled)
	}
	for i, want := range []int64{900, 300, 1250} {
		if got := h.OpenUntil(&h.Attempts[i]); got != want {
			t.Errorf("op %d open until %d, want %d", i+1, got, want)
		}
	}
	if got := h.Through(0).Settled; len(got) != 1 {
		t.Errorf("step one's settles %v", got)
	}
}

package history_test

import (
	"bytes"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// The interrupted marker a cut-short run writes reads back with its reason.
func TestInterrupted_RoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	for _, e := range []*history.Event{
		{Type: history.TypeMeta, V: history.Version, Scenario: "s"},
		{Type: history.TypeInvoke, Op: 1, NS: 1, Req: &history.Request{Method: "POST", Path: "/"}},
		{Type: history.TypeInterrupted, NS: 2, Error: "interrupt signal received"},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`{"type":"interrupted","ns":2,"error":"interrupt signal received"}`)) {
		t.Fatalf("written:\n%s", buf.String())
	}
	h, err := history.Load(bytes.NewReader(buf.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Interrupted != "interrupt signal received" || h.Skipped != 0 || len(h.Attempts) != 1 {
		t.Fatalf("Interrupted %q, skipped %d, %d attempts", h.Interrupted, h.Skipped, len(h.Attempts))
	}
	var plain bytes.Buffer
	w = history.NewWriter(&plain)
	_ = w.Write(&history.Event{Type: history.TypeMeta, V: history.Version})
	_ = w.Flush()
	if h, err := history.Load(&plain, history.LoadOptions{}); err != nil || h.Interrupted != "" {
		t.Fatalf("a complete history: %v, Interrupted %q", err, h.Interrupted)
	}
}

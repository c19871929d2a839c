package main

import (
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// TestProgress_ExplainsInfoOnce: the plain line says what info means the
// first time it shows a non-zero info count, right after that line, and
// never again; while info is 0 it says nothing.
func TestProgress_ExplainsInfoOnce(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	p := &progress{w: &out, name: "response-drop-replay", started: time.Now()}
	p.event(&history.Event{Type: history.TypeInvoke})
	p.event(&history.Event{Type: history.TypeOK})
	p.tick()
	if strings.Contains(out.String(), "info =") {
		t.Fatalf("explained info while its count is 0:\n%s", out.String())
	}
	p.event(&history.Event{Type: history.TypeInvoke})
	p.event(&history.Event{Type: history.TypeInfo})
	p.tick()
	p.event(&history.Event{Type: history.TypeInfo})
	p.tick()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"… response-drop-replay: 1 requests (ok 1, info 0, fail 0), 0 faults,",
		"… response-drop-replay: 2 requests (ok 1, info 1, fail 0), 0 faults,",
		infoMeaning,
		"… response-drop-replay: 2 requests (ok 1, info 2, fail 0), 0 faults,",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], want[i])
		}
	}
	if !strings.Contains(infoMeaning, "may have executed") {
		t.Errorf("infoMeaning %q does not say the service may have executed the request", infoMeaning)
	}
}

// TestProgress_LiveExplainsInfoOnce: on a terminal the explanation is
// printed above the live line, once, however often the line is redrawn.
func TestProgress_LiveExplainsInfoOnce(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	p := &progress{w: &out, live: true}
	p.start("crash-mid-request", "")
	p.event(&history.Event{Type: history.TypeInvoke})
	p.event(&history.Event{Type: history.TypeInfo})
	for range 3 {
		p.tick()
	}
	p.done()
	if n := strings.Count(out.String(), infoMeaning); n != 1 {
		t.Errorf("the explanation appears %d times, want 1:\n%q", n, out.String())
	}
}

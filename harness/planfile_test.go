package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/scenarios"
)

// TestReadPlan_RefusesWhatTheScenarioDoesNotHave: a saved plan loads as
// written; a hand edit naming a fault the step does not have, or naming
// one as another kind, or an index past the step's faults, is refused
// with the file and what was expected (it was ignored, used another fault,
// or panicked).
func TestReadPlan_RefusesWhatTheScenarioDoesNotHave(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load("../scenarios/storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := Plans(s, 3)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := json.MarshalIndent(plans[0], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := ReadPlanFor(write("ok.json", string(saved)), s, 0); err != nil {
		t.Fatalf("the saved plan is refused: %v", err)
	}
	if !strings.Contains(string(saved), `"response-drop#0"`) || !strings.Contains(string(saved), `"Kind": "crash"`) {
		t.Fatalf("the plan lacks the faults this test edits:\n%.2000s", saved)
	}
	edit := func(old, new string) string { return strings.Replace(string(saved), old, new, 1) }
	for name, c := range map[string]struct{ text, want string }{
		"unknown kind":         {edit(`"response-drop#0"`, `"respone-drop#0"`), `"respone-drop#0" is not an aimed fault of step 1 of storm (expected one of response-drop#0, double-click#1`},
		"kind of another":      {edit(`"response-drop#0"`, `"gateway-5xx#0"`), `"gateway-5xx#0" is not an aimed fault`},
		"index past the end":   {edit(`"response-drop#0"`, `"response-drop#40"`), `"response-drop#40" is not an aimed fault`},
		"timed fault unknown":  {edit(`"Kind": "crash"`, `"Kind": "meteor"`), `is not a timed fault of step 1 of storm (expected one of latency#5`},
		"timed index past end": {edit(`"Fault": 7`, `"Fault": 70`), `"crash#70" is not a timed fault`},
		"a typo in a field":    {edit(`"Intents"`, `"Intnets"`), `:3:4: not a plan: unknown field "Intnets"`},
		"wrong type":           {edit(`"Seed": 3`, `"Seed": "3"`), `:2:`},
		"not JSON":             {"{", "not a plan"},
	} {
		p := write(strings.ReplaceAll(name, " ", "-")+".json", c.text)
		_, err := ReadPlanFor(p, s, 0)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, p) || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want the file and %q", name, msg, c.want)
		}
		if n := utf8.RuneCountInString(msg) - len(p); n >= 200 {
			t.Errorf("%s: %d characters after the file name", name, n)
		}
	}
}

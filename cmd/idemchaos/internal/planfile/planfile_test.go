package planfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// TestReadPlan_RefusesWhatTheScenarioDoesNotHave: a saved plan loads as
// written; a hand edit naming a fault the step does not have, or naming
// one as another kind, or an index past the step's faults, is refused
// with the file and what was expected (it was ignored, used another fault,
// or panicked).
func TestReadPlan_RefusesWhatTheScenarioDoesNotHave(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load("../../../../scenarios/storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := harness.Plans(s, 3)
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
	if _, err := Read(write("ok.json", string(saved)), s, 0); err != nil {
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
		_, err := Read(p, s, 0)
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

// A plan file is bounded as the scenario it replays is (issue #22): a
// hand-edited plan of a billion clicks, a GET or CONNECT, an aimed fault
// at attempt 10^9, a start a year away, or /dev/zero is refused at the
// element's file:line:col, before anything is sent.
func TestReadPlan_Bounded(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load("../../../../scenarios/storm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := harness.Plans(s, 3)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := json.MarshalIndent(plans[0], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	edit := func(old, new string) string {
		if !strings.Contains(string(saved), old) {
			t.Fatalf("the saved plan has no %q", old)
		}
		return strings.Replace(string(saved), old, new, 1)
	}
	// The first intent's element opens on line 4, column 5.
	for name, c := range map[string]struct{ text, want string }{
		"GET":              {edit(`"Method": "POST"`, `"Method": "GET"`), `:4:5: Intents[0] (`},
		"CONNECT":          {edit(`"Method": "POST"`, `"Method": "CONNECT"`), `Method "CONNECT": a plan sends POST, PUT, PATCH, DELETE only`},
		"a billion clicks": {edit(`"Clicks": 0`, `"Clicks": 1000000000`), `Clicks 1000000000: at most 100`},
		"attempt 10^9":     {edit(`"Faults": {`, `"Faults": {"1000000000": "response-drop#0", `), `Faults[1000000000]: attempts count from 1 to 1000`},
		"a year away":      {edit(`"At": 0`, `"At": 31536000000000000`), `At and Spread are at most 1h0m0s`},
		"timed forever":    {regexp.MustCompile(`"For": [0-9]+`).ReplaceAllString(string(saved), `"For": 31536000000000000`), `Timed[0]: At and For are 0 to 1h0m0s`},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p, s, 0)
		if err == nil || !strings.HasPrefix(err.Error(), p+":") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s...%q", name, err, p, c.want)
		}
	}
	if _, err := Read("/dev/zero", s, 0); err == nil || !strings.Contains(err.Error(), "/dev/zero:1:1: not a plan: larger than 512 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// FuzzReadPlan: whatever a plan file holds, Read never panics, and
// refuses what it refuses naming the file first (with where in it when it
// can say). CI runs it for a bounded time (test.sh).
func FuzzReadPlan(f *testing.F) {
	s, err := scenarios.Load("../../../../scenarios/storm.yaml")
	if err != nil {
		f.Fatal(err)
	}
	plans, err := harness.Plans(s, 3)
	if err != nil {
		f.Fatal(err)
	}
	saved, err := json.Marshal(plans[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)
	f.Add([]byte(`{"Seed":1,"Intents":[{"ID":"i1","Method":"CONNECT","Path":"/","Clicks":1000000000,"Faults":{"0":"x"}}]}`))
	f.Add([]byte(`{"Seed":1,"Timed":[{"Fault":7,"Kind":"crash","At":-1}]}`))
	f.Add([]byte("\ufeff{}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "plan.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p, s, 0)
		if err != nil && !strings.HasPrefix(err.Error(), p) {
			t.Fatalf("error without the file first: %v", err)
		}
	})
}

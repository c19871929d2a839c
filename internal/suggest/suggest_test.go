package suggest

import "testing"

func TestClosest_Typos(t *testing.T) {
	t.Parallel()
	keys := []string{"intents", "tenants", "concurrency", "spread", "client"}
	for word, want := range map[string]string{
		"concurency":  "concurrency",
		"Intents":     "intents",
		"tenant":      "tenants",
		"sprad":       "spread",
		"colour":      "",
		"x":           "",
		"clients":     "client",
		"concurrency": "concurrency",
	} {
		if got := Closest(word, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
	if d := Distance("µs", "us"); d != 1 {
		t.Errorf("Distance counts runes: got %d, want 1", d)
	}
}

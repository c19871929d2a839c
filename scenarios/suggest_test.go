package scenarios

import "testing"

func TestSuggest_Typos(t *testing.T) {
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
		if got := suggest(word, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := levenshtein("kitten", "sitting"); d != 3 {
		t.Errorf("levenshtein(kitten, sitting) = %d, want 3", d)
	}
	if d := levenshtein("µs", "us"); d != 1 {
		t.Errorf("levenshtein counts runes: got %d, want 1", d)
	}
}

package foreign

import (
	"os"

	"github.com/idemchaos/idemchaos/history"
)

// Clicks is what a run's double clicks did, read from its history: the
// evidence that the race a click is sent to provoke happened, whatever the
// verdict says.
type Clicks struct {
	// Clicks counts the double clicks: an original and its copies.
	Clicks int
	// Overlapped counts those whose attempts were all in flight at once:
	// every invoke before the first answer.
	Overlapped int
	// Got500 counts those where some attempt was answered 500 (for
	// accounts-duplicate-500: the flaw provoked).
	Got500 int
}

// ReadClicks reads the double clicks of the history at path.
func ReadClicks(path string) (Clicks, error) {
	f, err := os.Open(path)
	if err != nil {
		return Clicks{}, err
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil {
		return Clicks{}, err
	}
	copies := map[int64]bool{} // ops of the extra copies
	for _, fl := range h.Faults {
		if fl.Kind == "double-click" && fl.Op != 0 {
			copies[fl.Op] = true
		}
	}
	// A click is the copies of an intent's first attempt and the original:
	// the first attempt of that intent sent nearest the first copy (copies
	// sent together are recorded in any order; an intent may be sent again
	// later, as a resubmission).
	type click struct{ firstCopy, original int }
	byIntent := map[string]*click{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Number != 1 || !copies[a.Op] {
			continue
		}
		if c, ok := byIntent[a.Intent]; !ok || a.Invoke < h.Attempts[c.firstCopy].Invoke {
			byIntent[a.Intent] = &click{firstCopy: i, original: -1}
		}
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		c, ok := byIntent[a.Intent]
		if !ok || a.Number != 1 || copies[a.Op] {
			continue
		}
		first := h.Attempts[c.firstCopy].Invoke
		if c.original < 0 || abs(a.Invoke-first) < abs(h.Attempts[c.original].Invoke-first) {
			c.original = i
		}
	}
	var out Clicks
	for intent, c := range byIntent {
		lastInvoke, firstEnd, got500 := int64(0), int64(1<<62), false
		for i := range h.Attempts {
			a := &h.Attempts[i]
			first := h.Attempts[c.firstCopy].Invoke
			// The click's attempts: its original, and its copies (sent
			// within the second after the first copy; a later resubmission
			// of the intent is not clicked).
			if a.Intent != intent || a.Number != 1 || !(i == c.original || copies[a.Op] && a.Invoke-first < 1e9) {
				continue
			}
			lastInvoke, firstEnd = max(lastInvoke, a.Invoke), min(firstEnd, a.End(h.End))
			got500 = got500 || a.Outcome == history.OK && a.Status == 500
		}
		out.Clicks++
		if lastInvoke < firstEnd {
			out.Overlapped++
		}
		if got500 {
			out.Got500++
		}
	}
	return out, nil
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

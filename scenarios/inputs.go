package scenarios

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules below refuse values that the schema admits but that would only
// fail once traffic runs: a control character in a name that ends up in
// every key header, a path Go's HTTP client cannot parse, a port no socket
// has, more intents than the request budget can send.

// checkName refuses a scenario name the run could not carry: it names the
// history file and, on a url target, is part of every idempotency key.
func (t *tree) checkName() {
	name, ok := t.str("/name")
	if !ok {
		return
	}
	if i, r, bad := controlChar(name); bad {
		t.errorf(t.posOf("/name"), "name: %s at byte %d; a name goes into history file names and keys: use printable characters", describeRune(r), i)
	}
}

// checkPath refuses an endpoint.path that would fail inside the run.
func (t *tree) checkPath() {
	p, ok := t.str("/endpoint/path")
	if !ok || !strings.HasPrefix(p, "/") {
		return // the schema reported it
	}
	if i, r, bad := controlChar(p); bad {
		t.errorf(t.posOf("/endpoint/path"), "endpoint.path: %s at byte %d (write it percent-encoded, e.g. %%0A)", describeRune(r), i)
		return
	}
	if _, err := url.Parse("http://h" + p); err != nil {
		t.errorf(t.posOf("/endpoint/path"), "endpoint.path: %s (a %% starts an escape of two hex digits; write %%25 for a %%)", urlReason(err))
	}
}

// checkURL refuses a URL at p whose port no socket can have, or that Go's
// HTTP client cannot parse. field names it in the message.
func (t *tree) checkURL(p, field string) bool {
	raw, ok := t.str(p)
	if !ok || !httpURL.MatchString(raw) {
		return true // the schema (or another rule) reported it
	}
	if i, r, bad := controlChar(raw); bad {
		t.errorf(t.posOf(p), "%s: %s at byte %d", field, describeRune(r), i)
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.errorf(t.posOf(p), "%s: %s", field, urlReason(err))
		return false
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			t.errorf(t.posOf(p), "%s: port %s is out of range (1-65535)", field, short(port))
			return false
		}
	}
	return true
}

// checkBudget refuses a traffic shape whose intents cannot all be sent:
// each intent sends at least one request, and the step stops at
// max_requests, so the rest would never run and the step would pass on
// the part that did.
func (t *tree) checkBudget(p, base string) {
	pick := func(key string, def int64) (int64, string) {
		for _, at := range []string{p + "/" + key, base + "/" + key} {
			if v, ok := t.get(at); ok {
				if n, ok := asInt(v); ok && n > 0 {
					return n, at
				}
				return def, at
			}
		}
		return def, ""
	}
	intents, ip := pick("intents", 20)
	t.checkClicks(p, intents, ip)
	budget, bp := pick("max_requests", 2000)
	if intents <= budget || (!strings.HasPrefix(ip, p+"/") && !strings.HasPrefix(bp, p+"/")) {
		return
	}
	at := ip
	if !strings.HasPrefix(at, p+"/") {
		at = bp
	}
	t.errorf(t.posOf(at), "%s: %d intents cannot fit in max_requests %d (each sends at least one request); raise max_requests or lower intents",
		t.where(p), intents, budget)
}

// MaxPlannedRequests bounds the requests one step's plan may hold before
// retries: its intents times the copies of its double-click faults. The
// plan is drawn in memory (a million requests take about 270 MB); past the
// bound "copies: 100" over a million intents grew a run to 15 GB.
const MaxPlannedRequests = 1_000_000

// checkClicks checks the traffic at p (a step's or the scenario's), whose
// intents count is set at ip, against [MaxPlannedRequests] with the copies
// of the double clicks its step sends: the step's own faults, or the
// scenario's when the step lists none.
func (t *tree) checkClicks(p string, intents int64, ip string) {
	faults := "/faults"
	if step := strings.TrimSuffix(p, "/traffic"); step != "" {
		switch {
		case t.has(step + "/faults"):
			faults = step + "/faults"
		case !strings.HasPrefix(ip, p+"/"):
			return // the scenario's own check says it, once
		}
	}
	list, _ := t.get(faults)
	fs, _ := list.([]any)
	for i, f := range fs {
		m, _ := f.(map[string]any)
		if m["kind"] != "double-click" {
			continue
		}
		copies := int64(2)
		if params, ok := m["params"].(map[string]any); ok {
			if n, ok := asInt(params["copies"]); ok && n > 0 {
				copies = n
			}
		}
		if intents*copies <= MaxPlannedRequests {
			continue
		}
		at := ip
		if at == "" || !strings.HasPrefix(at, p+"/") {
			at = fmt.Sprintf("%s/%d/params/copies", faults, i)
			if !t.has(at) {
				at = fmt.Sprintf("%s/%d", faults, i)
			}
		}
		t.errorf(t.posOf(at), "%s: %d intents × %d double-click copies is %d planned requests, more than the %d a step may plan; lower intents or copies",
			t.where(p), intents, copies, intents*copies, MaxPlannedRequests)
		return
	}
}

// controlChar finds the first control character (C0, DEL, C1) in s, or
// a byte that is not UTF-8 (reported as U+FFFD).
func controlChar(s string) (int, rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return i, r, true
		}
	}
	return 0, 0, false
}

func describeRune(r rune) string {
	if r == utf8.RuneError {
		return "a byte that is not UTF-8"
	}
	return fmt.Sprintf("a control character (U+%04X)", r)
}

// urlReason is url.Parse's complaint without the URL it repeats.
func urlReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return short(err.Error())
}

// short keeps messages under the 200 characters a terminal line holds.
func short(s string) string {
	const maxLen = 60
	if utf8.RuneCountInString(s) <= maxLen {
		return s
	}
	r := []rune(s)
	return string(r[:maxLen]) + "…"
}

package scaffold

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// contract is the status contract read from an operation's documented
// responses, with the reason for each code.
type contract struct {
	missing, reuse, inFlight int
	why                      []string // one line per code: where it came from
	successes                []int
	// fingerprint is canonical or strict when the document says how a
	// retry's payload is compared, "" when it does not.
	fingerprint, fingerprintWhy string
	replayHeader                string // a response header that marks replays, if documented
}

var (
	reuseWords    = regexp.MustCompile(`(?i)reus|different (request|payload|body|parameters|params)|same parameters|does not match|doesn't match|mismatch|already (been )?used|same key.*different|conflicting`)
	inFlightWords = regexp.MustCompile(`(?i)in[ _-]?progress|in[ _-]?flight|concurren|being processed|still (running|processing|being)|retry[ -]?after|lease|lock`)
	missingWords  = regexp.MustCompile(`(?i)missing|required|malformed|absent|without`)
)

// readContract reads which status means "key reused with another
// payload", "the first is still in flight" and "no key", from the codes
// and their descriptions. When the responses do not say, it falls back to
// the IETF draft's codes and says so.
func readContract(o *operation, keyHeader string, keyRequired bool) contract {
	c := contract{}
	type resp struct {
		code    int
		text    string
		headers []string
	}
	var rs []resp
	if o.op.Responses != nil {
		for k, r := range o.op.Responses.Map() {
			code, err := strconv.Atoi(k)
			if err != nil || r.Value == nil {
				continue
			}
			text := ""
			if r.Value.Description != nil {
				text = *r.Value.Description
			}
			var hs []string
			for h := range r.Value.Headers {
				hs = append(hs, h)
			}
			sort.Strings(hs)
			rs = append(rs, resp{code, text, hs})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].code < rs[j].code })
	keyWord := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(keyHeader) + `|idempoten|\bkey\b`)
	first := func(pred func(r resp) bool) (resp, bool) {
		for _, r := range rs {
			if pred(r) {
				return r, true
			}
		}
		return resp{}, false
	}
	for _, r := range rs {
		if r.code/100 == 2 {
			c.successes = append(c.successes, r.code)
			for _, h := range r.headers {
				if strings.Contains(strings.ToLower(h), "replay") {
					c.replayHeader = h
				}
			}
		}
	}
	// In flight first: its descriptions ("another request with this key is
	// in progress") also read like reuse, the other way round rarely.
	if r, ok := first(func(r resp) bool { return r.code/100 == 4 && inFlightWords.MatchString(r.text) && !reuseOnly(r.text) }); ok {
		c.inFlight = r.code
		c.why = append(c.why, fmt.Sprintf("in flight %d: documented as %q", r.code, excerpt(r.text, inFlightWords)))
	}
	// Reuse: a 4xx whose description says the key came with another payload.
	if r, ok := first(func(r resp) bool {
		return r.code/100 == 4 && r.code != c.inFlight && reuseWords.MatchString(r.text) && keyWord.MatchString(r.text)
	}); ok {
		c.reuse = r.code
		c.why = append(c.why, fmt.Sprintf("reuse %d: documented as %q", r.code, excerpt(r.text, reuseWords)))
	} else if r, ok := first(func(r resp) bool { return r.code/100 == 4 && reuseWords.MatchString(r.text) }); ok {
		// One code for both ("409: the key is in use or was used with other
		// parameters") is common too.
		c.reuse = r.code
		c.why = append(c.why, fmt.Sprintf("guess: reuse %d: documented as %q", r.code, excerpt(r.text, reuseWords)))
	} else {
		c.reuse = 422
		c.why = append(c.why, "guess: reuse 422: no documented response says what a reused key gets; 422 is the IETF draft's")
	}
	if c.inFlight == 0 {
		if r, ok := first(func(r resp) bool { return r.code == 409 }); ok {
			c.inFlight = r.code
			c.why = append(c.why, "guess: in flight 409: the 409 documented, and what most APIs answer a concurrent duplicate")
		} else {
			c.inFlight = 409
			c.why = append(c.why, "guess: in flight 409: no documented response says what a concurrent duplicate gets; 409 is the IETF draft's")
		}
	}
	c.fingerprint, c.fingerprintWhy = readFingerprint(o)
	if keyRequired {
		if r, ok := first(func(r resp) bool {
			return r.code/100 == 4 && r.code != c.reuse && missingWords.MatchString(r.text) && keyWord.MatchString(r.text)
		}); ok {
			c.missing = r.code
			c.why = append(c.why, fmt.Sprintf("missing key %d: documented as %q", r.code, excerpt(r.text, missingWords)))
		} else {
			c.missing = 400
			c.why = append(c.why, "guess: missing key 400: the key is required but no response says what its absence gets")
		}
	} else {
		c.why = append(c.why, "missing key 0: the key is optional, so a request without one executes")
	}
	return c
}

// reuseOnly says a description speaks of reuse and not of a request in
// progress, although it may mention a retry.
func reuseOnly(text string) bool {
	return reuseWords.MatchString(text) && !regexp.MustCompile(`(?i)in[ _-]?progress|in[ _-]?flight|concurren|being processed`).MatchString(text)
}

// excerpt is the sentence around the match, short enough for a comment.
func excerpt(text string, re *regexp.Regexp) string {
	text = strings.Join(strings.Fields(text), " ")
	loc := re.FindStringIndex(text)
	if loc == nil {
		loc = []int{0, 0}
	}
	start := max(0, loc[0]-40)
	end := min(len(text), loc[1]+40)
	for start > 0 && text[start] != ' ' {
		start--
	}
	for end < len(text) && text[end] != ' ' {
		end++
	}
	s := strings.TrimSpace(text[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}

// profile names the built-in profile the codes match, or "custom".
func (c contract) profile() string {
	switch {
	case c.missing == 400 && c.reuse == 422 && c.inFlight == 409:
		return "ietf"
	case c.missing == 0 && c.reuse == 400 && c.inFlight == 409:
		return "stripe"
	}
	return "custom"
}

// keyRequired says whether the operation requires the key header; a key
// the document does not declare is optional as far as it says.
func keyRequired(o *operation) bool {
	return o.keyParam != nil && o.keyParam.Required
}

var (
	canonicalWords = regexp.MustCompile(`(?i)canonical|sorted keys|key order (does not|doesn't) matter|whitespace (is )?ignored|semantically (equal|identical)`)
	strictWords    = regexp.MustCompile(`(?i)byte[- ]for[- ]byte|exact bytes|raw bytes|byte-identical (request|body|payload)`)
)

// readFingerprint reads how the service compares a retry's payload with
// the first request's, from the operation's and its request body's
// descriptions.
func readFingerprint(o *operation) (string, string) {
	text := o.op.Description + " " + o.op.Summary
	if rb := o.op.RequestBody; rb != nil && rb.Value != nil {
		text += " " + rb.Value.Description
	}
	for _, p := range []struct {
		name string
		re   *regexp.Regexp
	}{{"canonical", canonicalWords}, {"strict", strictWords}} {
		if p.re.MatchString(text) {
			return p.name, fmt.Sprintf("documented as %q", excerpt(text, p.re))
		}
	}
	return "", ""
}

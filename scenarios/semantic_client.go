package scenarios

import (
	"slices"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
)

// clientTarget gives a client scenario without a target the bundled
// reference as its upstream, before the schema asks for a target: the
// client needs nothing else to be tested.
func (t *tree) clientTarget() {
	root, ok := t.val.(map[string]any)
	if !ok {
		return
	}
	if _, client := root["client"]; !client {
		return
	}
	if _, has := root["target"]; !has {
		root["target"] = map[string]any{"reference": map[string]any{}}
	}
}

// serverOnly are the settings of the harness's own driver, which a client
// scenario does not have: its client sends the traffic.
var serverOnly = []string{"traffic"}

// checkClient checks a client block and what a client scenario may hold.
func (t *tree) checkClient() {
	if !t.has("/client") {
		return
	}
	if _, ok := t.get("/client/command"); ok {
		if first, ok := t.str("/client/command/0"); ok && strings.TrimSpace(first) != first {
			t.errorf(t.posOf("/client/command/0"), "client.command[0]: %q has spaces around it; the command is an argv list, not a shell line", first)
		}
	}
	env, _ := t.get("/client/env")
	if m, ok := env.(map[string]any); ok {
		for k := range m {
			if strings.HasPrefix(strings.ToUpper(k), "IDEMCHAOS_") {
				t.errorf(t.keyPos("/client/env/"+k), "client.env.%s: the IDEMCHAOS_* variables are the harness's (IDEMCHAOS_URL, _PATH, _TOKEN, _INTENT, _TENANT, _BODY)", k)
			}
		}
	}
	retry := t.ints("/client/contract/retry_statuses")
	for i, s := range t.ints("/client/contract/permanent_statuses") {
		if slices.Contains(retry, s) {
			t.errorf(t.posOf(ptr("/client/contract/permanent_statuses", strconv.Itoa(i))), "client.contract: status %d is both retryable and permanent", s)
		}
	}
	if t.has("/target/image") {
		t.errorf(t.keyPos("/target/image"), "target.image: a client scenario's upstream is the reference or target.url")
	}
	for _, k := range serverOnly {
		if t.has("/" + k) {
			t.errorf(t.keyPos("/"+k), "%s: a client scenario has no %s: its client sends it (client.intents and client.concurrency shape it)", k, k)
		}
	}
	list, _ := t.get("/steps")
	steps, _ := list.([]any)
	for i := range steps {
		sp := ptr("/steps", strconv.Itoa(i))
		for _, k := range []string{"traffic", "resend", "callbacks", "webhook"} {
			if t.has(sp + "/" + k) {
				t.errorf(t.keyPos(sp+"/"+k), "%s.%s: not in a client scenario: its client sends the traffic", t.where(sp), k)
			}
		}
	}
}

// ints reads a list of integers at p (nil when it is not one).
func (t *tree) ints(p string) []int {
	v, _ := t.get(p)
	list, _ := v.([]any)
	var out []int
	for _, x := range list {
		n, ok := asInt(x)
		if !ok {
			return nil
		}
		out = append(out, int(n))
	}
	return out
}

// checkClientFault checks that fault fp fits the scenario's side: a
// client scenario's faults act on the client's path; a fault that acts
// only there is for client scenarios.
func (t *tree) checkClientFault(fp, kind string, f faults.Fault) {
	client := t.has("/client")
	_, onPath := faults.ClientPathOf(f)
	switch {
	case client && !onPath:
		t.errorf(t.posOf(fp+"/kind"), "%s: %s does not act on a client's path (client scenarios take gateway-5xx, in-flight, latency, rate-limit, refuse, reject, response-drop, stall, unavailable)", t.where(fp+"/kind"), kind)
	case !client && faults.IsClientOnly(f):
		t.errorf(t.posOf(fp+"/kind"), "%s: %s acts only on a client's path: it needs a client: block", t.where(fp+"/kind"), kind)
	}
	if !client {
		for _, k := range []string{"attempts", "every"} {
			if t.has(fp + "/when/" + k) {
				t.errorf(t.keyPos(fp+"/when/"+k), "%s.%s: only in a client scenario", t.where(fp+"/when"), k)
			}
		}
	}
}

// checkInvariantSide checks that invariant name at ip judges the
// scenario's side: a client scenario its client, a server scenario its
// server (exactly-once judges both).
func (t *tree) checkInvariantSide(ip, name string) {
	client := slices.Contains(checkers.SuiteNames(checkers.SuiteClient), name)
	server := slices.Contains(checkers.Names(), name)
	switch {
	case t.has("/client") && server && !client:
		t.errorf(t.posOf(ip), "%s: %s judges a server; a client scenario judges its client (%s)", t.where(ip), name, strings.Join(checkers.SuiteNames(checkers.SuiteClient), ", "))
	case !t.has("/client") && client && !server:
		t.errorf(t.posOf(ip), "%s: %s is a client invariant: it needs a client: block", t.where(ip), name)
	}
}

package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/scenarios"
)

func parseScenario(t *testing.T, yaml string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const tenantInBody = `
target: {url: "http://127.0.0.1:9"}
endpoint:
  path: /orders
  body: '{"tenant":"{{tenant}}","sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}'
  tenant: {in: body}
contract: {fingerprint: canonical}
traffic: {intents: 60, tenants: 3, reuse: 0.3, retyped: 0.4, shared_keys: 0.3, duplicates: 0.4, collisions: 0.1}
effects: {oracle: none}
`

// Every planned request names its own tenant, whatever key it shares or
// reuses; before, a body was filled before the tenant was swapped.
func TestPlan_BodiesNameTheirOwnTenant(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, tenantInBody)
	shared := 0
	for seed := int64(1); seed <= 20; seed++ {
		ps, err := Plans(s, seed)
		if err != nil {
			t.Fatal(err)
		}
		owner := map[string]string{}
		for _, in := range ps[0].Intents {
			var b struct{ Tenant string }
			if err := json.Unmarshal(in.Body, &b); err != nil {
				t.Fatalf("seed %d %s: body %s: %v", seed, in.ID, in.Body, err)
			}
			if b.Tenant != in.Tenant {
				t.Errorf("seed %d %s: tenant %s sends a body naming %s: %s", seed, in.ID, in.Tenant, b.Tenant, in.Body)
			}
			if o, ok := owner[in.Key]; ok && o != in.Tenant {
				shared++
			}
			owner[in.Key] = in.Tenant
		}
	}
	if shared == 0 {
		t.Fatal("no plan shared a key across tenants: the test proved nothing")
	}
}

// A reuse always sends a payload no earlier use of its key sent, and some
// reuses differ only in a value's JSON type.
func TestPlan_ReuseAlwaysDiffersFromEarlierUses(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, tenantInBody)
	reuses, retyped, reserialised := 0, 0, 0
	for seed := int64(1); seed <= 30; seed++ {
		ps, _ := Plans(s, seed)
		firstOf := map[string]driver.Intent{}
		own := map[string]driver.Intent{} // each intent's first request
		type sent struct {
			intent string
			body   []byte
		}
		bodies := map[string][]sent{}
		// What the service stores for a key: its use that starts first.
		stored := map[string]driver.Intent{}
		for _, in := range ps[0].Intents {
			if in.Variant == driver.VariantRetypedString || in.Variant == driver.VariantRetypedBool {
				continue
			}
			if f, ok := stored[in.Tenant+"/"+in.Key]; !ok || in.At < f.At {
				stored[in.Tenant+"/"+in.Key] = in
			}
		}
		for _, in := range ps[0].Intents {
			scope := in.Tenant + "/" + in.Key
			if f, ok := firstOf[scope]; ok && f.ID != in.ID {
				reuses++
				for _, b := range bodies[scope] {
					if b.intent != in.ID && bytes.Equal(b.body, in.Body) {
						t.Errorf("seed %d: %s reuses %s's key with a body already sent with it: %s", seed, in.ID, f.ID, in.Body)
					}
				}
			}
			if _, ok := firstOf[scope]; !ok {
				firstOf[scope] = in
			}
			orig, seen := own[in.ID]
			if !seen {
				own[in.ID] = in
			}
			switch in.Variant {
			case driver.VariantRetypedString, driver.VariantRetypedBool:
				retyped++
				if !strings.Contains(string(in.Body), `"qty":"`) && !strings.Contains(string(in.Body), `"qty":true`) {
					t.Errorf("seed %d %s: %s body has no retyped qty: %s", seed, in.ID, in.Variant, in.Body)
				}
				// Only a type differs from what the service stored: the
				// key's use that starts first (a loose comparison takes
				// them for equal), and the probe starts after it.
				f, ok := stored[scope]
				if !ok {
					break // a collision's copy of a probe, on a key of its own
				}
				if a, b := loosely(t, in.Body), loosely(t, f.Body); !reflect.DeepEqual(a, b) {
					t.Errorf("seed %d %s: %s differs from the key's stored use %s (%s) in more than a type", seed, in.ID, in.Body, f.ID, f.Body)
				}
				if in.At <= f.At {
					t.Errorf("seed %d %s: the probe starts at %v, not after the key's stored use %s at %v", seed, in.ID, in.At, f.ID, f.At)
				}
			case driver.VariantReserialised:
				reserialised++
				var a, b any
				_ = json.Unmarshal(in.Body, &a)
				_ = json.Unmarshal(orig.Body, &b)
				if !seen || !reflect.DeepEqual(a, b) || bytes.Equal(in.Body, orig.Body) {
					t.Errorf("seed %d %s: re-serialised %s is not its first request's JSON written otherwise (%s)", seed, in.ID, in.Body, orig.Body)
				}
			}
			bodies[scope] = append(bodies[scope], sent{in.ID, in.Body})
		}
	}
	if reuses == 0 || retyped == 0 || reserialised == 0 {
		t.Fatalf("reuses %d, retyped %d, re-serialised %d: each must occur", reuses, retyped, reserialised)
	}
}

// Each probe is asked for: without contract.fingerprint no duplicate is
// re-serialised (there would be no telling what the service must answer),
// and without traffic.retyped no reuse changes only a type (a typed
// service refuses "qty":"1" as invalid before it looks at the key).
func TestPlan_ProbesOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	for name, yaml := range map[string]string{
		"no fingerprint": strings.Replace(tenantInBody, "contract: {fingerprint: canonical}\n", "", 1),
		"no retyped":     strings.Replace(tenantInBody, "retyped: 0.4, ", "", 1),
	} {
		s := parseScenario(t, yaml)
		for seed := int64(1); seed <= 20; seed++ {
			ps, _ := Plans(s, seed)
			for _, in := range ps[0].Intents {
				re := in.Variant == driver.VariantReserialised
				ty := strings.HasPrefix(in.Variant, "retyped")
				if (name == "no fingerprint" && re) || (name == "no retyped" && ty) {
					t.Fatalf("%s: seed %d %s sent %s", name, seed, in.ID, in.Variant)
				}
			}
		}
	}
}

func TestPlan_SameSeedSamePlan(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, tenantInBody)
	a, _ := Plans(s, 7)
	b, _ := Plans(s, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two plans")
	}
}

// loosely decodes a JSON object the way a loose comparison sees it: every
// value as text, true as 1 and false as 0.
func loosely(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := map[string]string{}
	for k, v := range m {
		switch x := v.(type) {
		case bool:
			out[k] = map[bool]string{true: "1", false: "0"}[x]
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// TestPlan_KeysAreTheDocumentedFormat: the keys a run sends to a user's
// service are scenarios.Key's, and the longest is scenarios.LongestKey's,
// so contract.max_key_length checks what is really sent.
func TestPlan_KeysAreTheDocumentedFormat(t *testing.T) {
	t.Parallel()
	s := parseScenario(t, "name: orders\ntarget: {url: \"http://127.0.0.1:9\"}\ntraffic: {intents: 12, duplicates: 0.3, reuse: 0.2}\nsteps:\n  - {name: one}\n  - {name: two, traffic: {intents: 4}}\neffects: {oracle: none}\n")
	nonce := strings.Repeat("x", scenarios.NonceLength)
	steps, err := resolveSteps(s, 42, s.KeyPrefix(nonce), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	longest := ""
	var prev Plan
	for i := range steps {
		p := steps[i].draw(prev)
		for _, in := range p.Intents {
			if !strings.HasPrefix(in.Key, "orders-"+nonce+"-") {
				t.Errorf("key %q lacks the scenario's name and nonce", in.Key)
			}
			if len(in.Key) > len(longest) {
				longest = in.Key
			}
		}
		prev = p
	}
	if want := s.LongestKey(42); len(longest) != len(want) || s.KeyLength(42) != len(want) {
		t.Errorf("longest key sent %q, scenarios.LongestKey says %q", longest, want)
	}
}

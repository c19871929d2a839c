package harness_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A purge asked of a service that a crash fault has just killed waits for
// the restart instead of failing the attempt (storm seeds 3 and 4 on a
// loaded machine: "fail for op 12, which no earlier invoke event started").
// The first attempt kills the service at its crash point; the retry's
// purge then comes while the service is still being restarted.
func TestWorld_PurgeWaitsForACrashedServiceToComeBack(t *testing.T) {
	o := run(t, `target: {reference: {retention: 10s, retry_window: 10s}}
traffic: {intents: 1, concurrency: 1, timeout: 3s, retry: {max_attempts: 6, base: 1ms, max: 2ms}}
faults:
  - {kind: crash, params: {point: before-claim}, when: {at: 0s}}
  - {kind: retention-expiry, params: {after: 1ms}, when: {nth: 1}}`, "")
	crashed, restarted := faultEvents(o.History, "crash", "fire"), faultEvents(o.History, "crash", "heal")
	if len(crashed) != 1 || len(restarted) != 1 {
		t.Fatalf("crash: %d fire, %d heal; want the service killed and restarted once", len(crashed), len(restarted))
	}
	// The fault fires twice per intent: the lost response, then the purge.
	var purged []int64
	for _, f := range faultEvents(o.History, "retention-expiry", "fire") {
		var d struct {
			Purged *bool `json:"purged"`
		}
		if err := json.Unmarshal(f.Detail, &d); err == nil && d.Purged != nil && *d.Purged {
			purged = append(purged, f.NS)
		}
	}
	if len(purged) == 0 || purged[0] < restarted[0].NS {
		for _, f := range o.History.Faults {
			t.Logf("fault %s %s op %d at %d: %s", f.Kind, f.Action, f.Op, f.NS, f.Detail)
		}
		for _, a := range o.History.Attempts {
			t.Logf("attempt op %d #%d status %d error %q", a.Op, a.Number, a.Status, a.Error)
		}
		t.Fatalf("purges at %v, restart done at %d: want a purge after the restart", purged, restarted[0].NS)
	}
	for _, a := range o.History.Attempts {
		if strings.HasPrefix(a.Error, "not sent") {
			t.Fatalf("op %d was not sent: %s", a.Op, a.Error)
		}
	}
}

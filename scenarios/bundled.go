package scenarios

import (
	"embed"
	"fmt"
)

//go:embed *.yaml
var bundled embed.FS

// suite is the bundled suite in the order demo runs it: the scenarios that
// catch the most common pitfalls first, storm last.
var suite = []string{
	"response-drop-replay.yaml",
	"double-click-exactly-once.yaml",
	"duplicate-delivery.yaml",
	"key-reuse.yaml",
	"twin-orders.yaml",
	"cross-tenant.yaml",
	"gateway-504.yaml",
	"crash-mid-request.yaml",
	"crash-after-ack.yaml",
	"consumer-restart.yaml",
	"replica-lag-lookup.yaml",
	"retention-window.yaml",
	"payment-callbacks.yaml",
	"storm.yaml",
}

// Bundled parses the scenarios shipped inside the binary, in suite order.
// Their File is "scenarios/<name>", where they live in the repository.
func Bundled() ([]*Scenario, error) {
	out := make([]*Scenario, 0, len(suite))
	for _, name := range suite {
		data, err := bundled.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("bundled scenario %s: %w", name, err)
		}
		s, err := Parse("scenarios/"+name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// designedFor names, per mutant of the reference, the bundled scenario built
// to show its pitfall. Other scenarios may catch it too; this one is where
// it shows first.
var designedFor = map[string]string{
	"no-key":                "response-drop-replay",
	"check-then-insert":     "double-click-exactly-once",
	"execute-then-record":   "double-click-exactly-once",
	"body-hash-key":         "twin-orders",
	"no-fingerprint":        "key-reuse",
	"empty-replay":          "response-drop-replay",
	"regenerate-on-replay":  "response-drop-replay",
	"global-namespace":      "cross-tenant",
	"processing-reexecutes": "double-click-exactly-once",
	"no-lease":              "crash-mid-request",
	"replica-read":          "replica-lag-lookup",
	"short-retention":       "retention-window",
	"consumer-no-dedupe":    "consumer-restart",
	"callback-accumulates":  "payment-callbacks",
	"commit-after-response": "crash-after-ack",
}

// DesignedFor returns the name of the bundled scenario built to show a
// mutant's pitfall, or "".
func DesignedFor(mutant string) string { return designedFor[mutant] }

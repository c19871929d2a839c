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

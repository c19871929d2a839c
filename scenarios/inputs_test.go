package scenarios_test

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/scenarios"
)

// TestParse_InputsThatFailInside: values the schema admits but a run could
// not use are refused by the loader, each with its position and a message
// a terminal line holds.
func TestParse_InputsThatFailInside(t *testing.T) {
	pos := regexp.MustCompile(`^[^:]+\.yaml:\d+:\d+: `)
	for _, name := range []string{"name-control", "path-escape", "path-control", "url-port", "intents-budget"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "testdata", "bad-yaml", name+".yaml")
			_, err := scenarios.Parse(filepath.Base(file), readFile(t, file))
			var errs *scenarios.Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("Parse accepted %s (err %v)", name, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !pos.MatchString(line) {
					t.Errorf("no file:line:col: %q", line)
				}
				if n := utf8.RuneCountInString(line); n >= 200 {
					t.Errorf("%d characters: %q", n, line)
				}
			}
		})
	}
}

// TestParse_InputsThatAreFine: the new rules do not refuse what works — a
// name in any script, an escaped path, a port in range, intents that fit.
func TestParse_InputsThatAreFine(t *testing.T) {
	for name, src := range map[string]string{
		"unicode name":    "name: commandes-été 注文\ntarget: {reference: {}}\n",
		"escaped path":    "target: {reference: {}}\nendpoint: {path: /v1/orders%2Fx?a=b%20c}\n",
		"port":            "target: {url: 'http://127.0.0.1:65535'}\neffects: {oracle: none}\n",
		"intents fit":     "target: {reference: {}}\ntraffic: {intents: 3000, max_requests: 3000}\n",
		"step raises max": "target: {reference: {}}\ntraffic: {intents: 3000, max_requests: 3000}\nsteps: [{name: a, traffic: {max_requests: 4000}}]\n",
	} {
		if _, err := scenarios.Parse("ok.yaml", []byte(src)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

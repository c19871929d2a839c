package scenarios_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/scenarios"
)

func TestParse_ExpandsEnvironmentInAddresses(t *testing.T) {
	t.Setenv("IDEMCHAOS_TEST_PORT", "8181")
	t.Setenv("IDEMCHAOS_TEST_DSN", "postgres://u@127.0.0.1:5999/db")
	t.Setenv("IDEMCHAOS_TEST_EMPTY", "")
	src := `target: {url: "http://127.0.0.1:${IDEMCHAOS_TEST_PORT}"}
endpoint: {body: '{"x":"${IDEMCHAOS_TEST_PORT}"}'}
effects:
  oracle: sql
  dsn: ${IDEMCHAOS_TEST_DSN}
  query: SELECT 'a', 'b', 'c'
`
	s, err := scenarios.Parse("env.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Target.URL != "http://127.0.0.1:8181" || s.Effects.DSN != "postgres://u@127.0.0.1:5999/db" {
		t.Errorf("url %q, dsn %q: not expanded", s.Target.URL, s.Effects.DSN)
	}
	if s.Endpoint.Body != `{"x":"${IDEMCHAOS_TEST_PORT}"}` {
		t.Errorf("body %q: expanded, but only addresses are", s.Endpoint.Body)
	}

	for name, c := range map[string]struct{ dsn, want string }{
		"default when unset": {"${IDEMCHAOS_TEST_UNSET:-postgres://d@localhost/x}", "postgres://d@localhost/x"},
		"default when empty": {"${IDEMCHAOS_TEST_EMPTY:-postgres://d@localhost/x}", "postgres://d@localhost/x"},
		"set beats default":  {"${IDEMCHAOS_TEST_DSN:-postgres://d@localhost/x}", "postgres://u@127.0.0.1:5999/db"},
		"lone dollar kept":   {"postgres://u:pa$s@localhost/x", "postgres://u:pa$s@localhost/x"},
	} {
		t.Run(name, func(t *testing.T) {
			src := "target: {url: http://127.0.0.1:1}\neffects: {oracle: sql, query: q, dsn: '" + c.dsn + "'}\n"
			s, err := scenarios.Parse("env.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if s.Effects.DSN != c.want {
				t.Errorf("dsn %q, want %q", s.Effects.DSN, c.want)
			}
		})
	}
}

func TestParse_UnsetEnvironmentVariableIsPositioned(t *testing.T) {
	src := "target: {url: http://127.0.0.1:1}\neffects:\n  oracle: http\n  url: ${IDEMCHAOS_TEST_UNSET}/effects\n  items: $[*]\n  tenant: $.t\n  key: $.k\n  id: $.i\n"
	_, err := scenarios.Parse("env.yaml", []byte(src))
	want := "env.yaml:4:8: effects.url: environment variable IDEMCHAOS_TEST_UNSET is not set"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
}

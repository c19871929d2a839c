package recorder

import (
	"net/http"
	"strings"

	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioTenant reads a request's tenant the way the scenario's run sends
// it: the bearer token through endpoint.tokens (tenant → token). A
// request it cannot place falls back to [DefaultTenant].
func ScenarioTenant(e scenarios.Endpoint) func(*http.Request, []byte) string {
	byToken := make(map[string]string, len(e.Tokens))
	for tenant, tok := range e.Tokens {
		byToken[tok] = tenant
	}
	return func(r *http.Request, body []byte) string {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if t, ok := byToken[tok]; ok {
				return t
			}
		}
		return DefaultTenant(r, body)
	}
}

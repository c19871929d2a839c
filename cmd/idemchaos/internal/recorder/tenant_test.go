package recorder_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/recorder"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestScenarioTenant_EveryPlacement(t *testing.T) {
	req := func(path, body string, hdr map[string]string) (*http.Request, []byte) {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		return r, []byte(body)
	}
	for name, c := range map[string]struct {
		e    scenarios.Endpoint
		path string
		body string
		hdr  map[string]string
		want string
	}{
		"token":         {scenarios.Endpoint{Tokens: map[string]string{"t1": "tok-a"}}, "/o", `{}`, map[string]string{"Authorization": "Bearer tok-a"}, "t1"},
		"header":        {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "header", Name: "X-Account"}}, "/o", `{}`, map[string]string{"X-Account": "acct_9"}, "acct_9"},
		"query":         {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "query", Name: "shop"}}, "/o?shop=s%201", `{}`, nil, "s 1"},
		"path":          {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "path"}, Path: "/v2/accounts/{{tenant}}/payments/{{uuid}}"}, "/v2/accounts/acct%2F7/payments/99", `{}`, nil, "acct/7"},
		"json body":     {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "body"}, Body: `{"amount":{{amount}},"meta":{"tenant_id":"{{tenant}}"}}`}, "/o", `{"amount":5,"meta":{"tenant_id":"t2"}}`, nil, "t2"},
		"form body":     {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "body"}, Body: `amount={{amount}}&account={{tenant}}`}, "/o", `amount=5&account=t3`, nil, "t3"},
		"falls back":    {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "header", Name: "X-Account"}}, "/o", `{}`, map[string]string{"Authorization": "Bearer x"}, recorder.DefaultTenant(&http.Request{Header: http.Header{"Authorization": {"Bearer x"}}}, nil)},
		"path mismatch": {scenarios.Endpoint{Tenant: scenarios.TenantPlacement{In: "path"}, Path: "/v2/accounts/{{tenant}}/payments"}, "/v2/other", `{}`, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			r, b := req(c.path, c.body, c.hdr)
			if got := recorder.ScenarioTenant(c.e)(r, b); got != c.want {
				t.Errorf("tenant %q, want %q", got, c.want)
			}
		})
	}
}

package harness

import (
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/scenarios"
)

// requestSpec is what a plan needs of the scenario's endpoint: the request
// template and the payload fingerprint the contract expects.
type requestSpec struct {
	method      string
	tmpl        *driver.Template
	fingerprint string
}

// requestOf is the request every intent of s sends.
func requestOf(s *scenarios.Scenario) requestSpec {
	e := s.Endpoint
	tmpl := &driver.Template{Path: e.Path, Headers: e.Headers, Body: e.Body, TenantName: e.Tenant.Name}
	switch e.Tenant.In {
	case scenarios.TenantInHeader:
		tmpl.TenantIn = driver.TenantInHeader
	case scenarios.TenantInQuery:
		tmpl.TenantIn = driver.TenantInQuery
	default:
		tmpl.TenantIn = driver.TenantInToken
	}
	return requestSpec{method: e.Method, tmpl: tmpl, fingerprint: s.Contract.Fingerprint}
}

// render fills in's Path and Body with what its first attempt sends.
func (r requestSpec) render(in *driver.Intent) {
	out := r.tmpl.Render(in, in.Key)
	in.Path, in.Body = out.Path, out.Body
}

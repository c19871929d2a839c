package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sqlEffects is what the README tells a user to put in the effects block
// of a scenario generated for ordersvc.
const sqlEffects = `effects:
  oracle: sql
  dsn: ${ORDERSVC_DSN}
  query: SELECT tenant, idem_key, 'order ' || id FROM orders
`

// The README's "From an OpenAPI file", step by step: init from ordersvc's
// document, validate, fill in the effects, run against the buggy ordersvc
// (caught) and the correct one (clean).
func TestInit_FromOpenAPIToAFirstVerdict(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runMain(t, "init", "--openapi", "../../examples/ordersvc/openapi.yaml", "--out", dir)
	if code != 0 || !strings.Contains(out, "create-order.yaml") || errs != "" {
		t.Fatalf("init: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runMain(t, "validate", dir); code != 0 || strings.Count(out, "ok  ") != 2 {
		t.Fatalf("validate: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runMain(t, "init", "--openapi", "../../examples/ordersvc/openapi.yaml", "--out", dir); code != 3 || !strings.Contains(errs, "exists") {
		t.Errorf("init over existing files: exit %d, want 3 (--force overwrites)\n%s", code, errs)
	}
	file := filepath.Join(dir, "create-order.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const todo = "effects:\n  oracle: none  # TODO: sql or http, as above\n"
	if !strings.Contains(string(b), todo) {
		t.Fatalf("the effects TODO is not where the README says:\n%s", b)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), todo, sqlEffects, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		buggy bool
		code  int
		want  string
	}{{"buggy", true, 1, "exactly-once"}, {"correct", false, 0, "PASS"}} {
		t.Run(c.name, func(t *testing.T) {
			url := startOrdersvc(t, c.buggy)
			code, out, errs := runMain(t, "run", "-s", file, "--target", url)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("run against the %s ordersvc: exit %d, want %d with %q\n%s\n%s", c.name, code, c.code, c.want, out, errs)
			}
			t.Logf("%s", out)
		})
	}
}

func TestInit_Errors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "idemchaos")
	if err := os.WriteFile(file, []byte("a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no document":       {[]string{"init", "--out", dir}, `required flag(s) "openapi" not set`},
		"missing document":  {[]string{"init", "--openapi", filepath.Join(dir, "nope.yaml"), "--out", dir}, "no such file"},
		"unknown operation": {[]string{"init", "--openapi", "../../testdata/openapi/account-path.json", "--key-header", "X-Idempotency-Key", "--operation", "nope", "--out", dir}, "no operation nope"},
		"out is a file":     {[]string{"init", "--openapi", "../../examples/ordersvc/openapi.yaml", "--out", file}, "is a file, not a directory (the idemchaos binary?): pass --out DIR"},
		"no key header":     {[]string{"init", "--openapi", "../../testdata/openapi/account-path.json", "--out", dir}, "--key-header NAME"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errs := runMain(t, c.args...)
			if code != 3 || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, want 3 with %q\n%s", code, c.want, errs)
			}
		})
	}
}

package dsnform

import (
	"strings"
	"testing"
)

func TestEndpoints_ByScheme(t *testing.T) {
	RegisterDSN(DSNForm{Name: "demo", Schemes: []string{"Demo"}, Endpoints: func(dsn string) ([]Endpoint, error) {
		return []Endpoint{{Network: "file", Addr: strings.TrimPrefix(dsn, "demo:")}}, nil
	}})
	name, eps, err := Endpoints("DEMO:/tmp/x")
	if err != nil || name != "demo" || len(eps) != 1 {
		t.Fatalf("Endpoints = %q %v %v", name, eps, err)
	}
	for dsn, want := range map[string]string{
		"sqlite:/tmp/x.db":    "which this program does not link",
		"oracle://scott@host": `scheme "oracle" is not one idemchaos reads (want demo:, mysql:, postgres:, postgresql:, sqlite:, or key=value for postgres)`,
	} {
		if _, _, err := Endpoints(dsn); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dsn, err, want)
		}
	}
	if err := Check("postgres://a/b"); err != nil {
		t.Errorf("Check of a Postgres DSN with no oracle linked: %v, want it left to the run", err)
	}
	if err := Check("sqlite:/x"); err == nil {
		t.Error("Check of a SQLite DSN with no SQLite linked passed")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of demo: did not panic")
		}
	}()
	RegisterDSN(DSNForm{Name: "other", Schemes: []string{"demo"}})
}

func TestScheme(t *testing.T) {
	for in, want := range map[string]string{"postgres://a": "postgres", "sqlite:x.db": "sqlite", "My+SQL.x-1:": "my+sql.x-1", "host=a": "", "1a:b": "", ":x": ""} {
		if got, _ := Scheme(in); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", in, got, want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs the CLI in-process and returns its exit code and streams.
// After a run, check of each run's history must give the run's verdict
// and exit code (see agreesWithCheck): every run test is also a test of
// the one verdict.
func runMain(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errb bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
	code = m.Exit(m.Run(context.Background(), args))
	if len(args) > 0 && args[0] == "run" {
		agreesWithCheck(tb, args, code, out.String())
	}
	return code, out.String(), errb.String()
}

func writeFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestValidate_Outcomes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "target: {reference: {}}\n")
	bad := writeFile(t, dir, "bad.yaml", "target: {reference: {}}\ntraffic:\n  concurency: 3\n  timeout: 5 seconds\n")
	writeFile(t, dir, "notes.txt", "not a scenario")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "deep.yml", "target: {url: http://127.0.0.1:1}\neffects: {oracle: none}\n")
	remote := writeFile(t, t.TempDir(), "remote.yaml", "target:\n  url: https://api.example.com\n  allow_remote: true\neffects: {oracle: none}\n")

	for name, c := range map[string]struct {
		args     []string
		code     int
		out, err []string
		notOut   []string
	}{
		"valid file": {args: []string{"validate", good}, code: 0, out: []string{"ok  " + good}},
		// A file that declares a remote target is valid (validate sends
		// nothing); what its run needs is noted at the key.
		"remote declared": {args: []string{"validate", remote}, code: 0, out: []string{"ok  " + remote},
			err: []string{remote + ":3:3: note: target.allow_remote: this scenario runs only with --allow-remote"}},
		"examples": {args: []string{"validate", "../../scenarios/examples"}, code: 0, out: []string{"ok  ../../scenarios/examples/response-drop.yaml"}},
		"invalid file": {args: []string{"validate", bad}, code: 3, err: []string{
			bad + `:3:3: unknown key "concurency" in traffic; did you mean "concurrency"?`,
			bad + `:4:12: traffic.timeout: "5 seconds" is not a duration (e.g. 500ms, 2s, 1m)`,
			"validate: 1 of 1 scenario files invalid",
		}},
		"directory":          {args: []string{"validate", dir}, code: 3, out: []string{"ok  " + good}, err: []string{bad + ":3:3:"}, notOut: []string{"deep.yml", "notes.txt"}},
		"recursive":          {args: []string{"validate", "-r", dir}, code: 3, out: []string{"ok  " + good, "ok  " + filepath.Join(sub, "deep.yml")}},
		"missing path":       {args: []string{"validate", filepath.Join(dir, "nope.yaml")}, code: 3, err: []string{"no such file"}},
		"empty directory":    {args: []string{"validate", t.TempDir()}, code: 3, err: []string{"no *.yaml files"}},
		"no arguments":       {args: []string{"validate"}, code: 3},
		"bad fixtures":       {args: []string{"validate", "../../testdata/bad-yaml"}, code: 3, err: []string{"empty.yaml:1:1: the file is empty"}},
		"schema with an arg": {args: []string{"validate", "--schema", good}, code: 3},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runMain(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			for _, w := range c.out {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range c.notOut {
				if strings.Contains(stdout+stderr, w) {
					t.Errorf("output mentions %q:\n%s%s", w, stdout, stderr)
				}
			}
			for _, w := range c.err {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestValidate_PrintsSchema(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runMain(t, "validate", "--schema")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || doc["$schema"] == nil {
		t.Fatalf("exit %d, output is not the JSON Schema:\n%.200s", code, stdout)
	}
}

func TestValidate_HelpHasExample(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runMain(t, "validate", "--help")
	if code != 0 || !strings.Contains(stdout, "idemchaos validate scenarios/") || !strings.Contains(stdout, "yaml-language-server") {
		t.Errorf("exit %d, help:\n%s", code, stdout)
	}
}

// The command links every DSN form idemchaos defines: a SQLite or MySQL
// DSN validates (a Go test that does not link their drivers refuses them,
// testdata/bad-yaml/effects-dsn-unlinked.yaml), and an unknown scheme or a
// malformed DSN is refused at its file:line:col.
func TestValidate_DSNSchemes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := func(name, dsn string) string {
		return writeFile(t, dir, name+".yaml", "target: {url: http://127.0.0.1:8080}\neffects:\n  oracle: sql\n  dsn: "+dsn+"\n  query: SELECT tenant, key, id FROM orders\n")
	}
	for _, dsn := range []string{"sqlite:orders.sqlite", "mysql://app:secret@127.0.0.1:3306/orders", "postgres://postgres@127.0.0.1/orders", "host=127.0.0.1 dbname=orders"} {
		f := scenario("good", "'"+dsn+"'")
		if code, _, stderr := runMain(t, "validate", f); code != 0 {
			t.Errorf("%s: exit %d\n%s", dsn, code, stderr)
		}
	}
	for dsn, want := range map[string]string{
		"oracle://scott@127.0.0.1/orders": `:4:8: effects.dsn: scheme "oracle" is not one idemchaos reads (mysql:, postgres:, postgresql:, sqlite:, key=value (postgres))`,
		"mysql:///orders":                 ":4:8: effects.dsn: want mysql://user:password@host:port/database",
		"sqlite:":                         ":4:8: effects.dsn: want sqlite:PATH (the database file)",
	} {
		f := scenario("bad", "'"+dsn+"'")
		code, _, stderr := runMain(t, "validate", f)
		if code != 3 || !strings.Contains(stderr, f+want) {
			t.Errorf("%s: exit %d, want 3 and %q\n%s", dsn, code, f+want, stderr)
		}
	}
}

package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// plan prints every key whole, as a user's service receives it (the
// scenario's name and the run's nonce first), and the longest one: a
// service that truncates keys can be checked against it before any run.
func TestPlan_PrintsWholeKeys(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "orders.yaml", `name: orders-with-a-long-name
target: {url: "http://127.0.0.1:9"}
traffic: {intents: 3}
effects: {oracle: none}
`)
	code, stdout, stderr := runMain(t, "plan", "-s", file, "--seed", "7")
	if code != ExitClean {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`longest (\d+) characters \((\S+)\)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no longest key in:\n%s", stdout)
	}
	keys := regexp.MustCompile(`tenant \S+ +key (\S+)`).FindAllStringSubmatch(stdout, -1)
	if len(keys) != 3 {
		t.Fatalf("%d keys printed, want 3:\n%s", len(keys), stdout)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k[1], "orders-with-a-long-name-xxxxxxxx-") {
			t.Errorf("key %q is not whole (the scenario's name and nonce first)", k[1])
		}
	}
	if !strings.Contains(stdout, "key "+m[2]) || strconv.Itoa(len(m[2])) != m[1] {
		t.Errorf("the longest key %q (%s characters) is not one printed whole:\n%s", m[2], m[1], stdout)
	}
}

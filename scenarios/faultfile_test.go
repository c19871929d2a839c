package scenarios

import (
	"strings"
	"testing"
)

func TestParseFaults_TakesClientPathKinds(t *testing.T) {
	fs, err := ParseFaults("f.yaml", []byte("faults:\n  - kind: response-drop\n    when: {fraction: 0.5, attempts: 2}\n  - kind: rate-limit\n    when: {every: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Kind != "response-drop" || fs[0].When.Attempts != 2 || !fs[1].When.Every {
		t.Fatalf("faults = %+v", fs)
	}
	if _, err := fs[0].Build(); err != nil {
		t.Fatal(err)
	}
}

func TestParseFaults_RefusesAtFileLineCol(t *testing.T) {
	_, err := ParseFaults("f.yaml", []byte("faults:\n  - kind: crash\n  - kind: response-drop\n    params: {bogus: 1}\ntraffic: {}\n"))
	if err == nil {
		t.Fatal("a server fault, an unknown parameter and another section were taken")
	}
	for _, want := range []string{"f.yaml:2:11: faults[0].kind: crash does not act on a client's path", "f.yaml:4:14: unknown key \"bogus\"", "f.yaml:5:1: traffic: a fault file holds only faults:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := ParseFaults("f.yaml", []byte("name: x\n")); err == nil || !strings.Contains(err.Error(), "faults: missing") {
		t.Errorf("a file without faults: %v", err)
	}
}

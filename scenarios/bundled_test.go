package scenarios_test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Every YAML file of the folder is in the bundled suite, every bundled
// scenario loads, and every mutant has the scenario designed for it.
func TestBundled_IsTheWholeFolderAndCoversEveryMutant(t *testing.T) {
	t.Parallel()
	suite, err := scenarios.Bundled()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var files []string
	for _, s := range suite {
		names[s.Name] = true
		files = append(files, filepath.Base(s.File))
	}
	onDisk, _ := filepath.Glob("*.yaml")
	sort.Strings(files)
	sort.Strings(onDisk)
	if len(files) != len(onDisk) {
		t.Fatalf("bundled %v, folder has %v", files, onDisk)
	}
	for i := range files {
		if files[i] != onDisk[i] {
			t.Fatalf("bundled %v, folder has %v", files, onDisk)
		}
	}
	for _, m := range reference.Mutants() {
		if d := scenarios.DesignedFor(m.Name); !names[d] {
			t.Errorf("mutant %s: designed scenario %q is not bundled", m.Name, d)
		}
	}
}

// A bundled scenario's description is plain English: no citation of a
// source a user cannot open, no text a headless browser draws as boxes.
func TestBundled_DescriptionsInPlainEnglish(t *testing.T) {
	t.Parallel()
	suite, err := scenarios.Bundled()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range suite {
		if s.Description == "" || strings.Contains(s.Description, "seed 0") || strings.Contains(s.Description, "§") {
			t.Errorf("%s: description %q", s.Name, s.Description)
		}
		for _, r := range s.Description {
			if r >= 0x2E80 {
				t.Errorf("%s: description has %q, not plain English", s.Name, r)
				break
			}
		}
	}
}

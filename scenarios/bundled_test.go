package scenarios_test

import (
	"path/filepath"
	"sort"
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

package partcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// FuzzMergePartials: whatever two partition reports hold, reading and
// merging them never panics and stays bounded (a crafted total, step or
// count is refused before anything is sized by it). Seeded with the two
// real shares of a generated history. CI runs it for a bounded time
// (test.sh).
func FuzzMergePartials(f *testing.F) {
	dir := f.TempDir()
	name := filepath.Join(dir, "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Default(300)), 0o600); err != nil {
		f.Fatal(err)
	}
	var shares [2][]byte
	for i := range shares {
		p, err := Check(name, Options{Partitions: 2, Only: i, Workers: 1, Dir: f.TempDir(), Contract: checkers.DefaultContract()})
		if err != nil {
			f.Fatal(err)
		}
		if shares[i], err = json.Marshal(p); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(shares[0], shares[1])
	f.Add(shares[0], []byte(`{"index":1,"total":99999999999,"results":[{"invariant":"exactly-once","step":99999999999,"partial":"e30="}]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var pa, pb Partial
		if json.Unmarshal(a, &pa) != nil || json.Unmarshal(b, &pb) != nil {
			return
		}
		_, _, _ = Merge([]*Partial{&pa, &pb})
	})
}

package htmlpage_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

var updatePages = flag.Bool("update-pages", false, "rewrite testdata/pages.sha256 from this code's pages")

const pagesFile = "testdata/pages.sha256"

// TestPages_SameBytes holds the report's output over the golden histories
// to the bytes it had when the timelines began to read the checkers'
// index of a history (#21: one Scope, one index) instead of grouping by
// tenant and key on their own: every golden's HTML page and timelines
// alone, checked by its own suite, and a seed sweep of all of them with
// histories lost (the goldens the digests list: one added since is not
// pinned until the next update). A change that means to change the page regenerates the
// digests (go test ./report/htmlpage -run TestPages -update-pages) and says why in
// its commit; one that does not must leave every byte as it was.
func TestPages_SameBytes(t *testing.T) {
	t.Parallel()
	got := map[string]string{}
	page := func(name string, rep report.Report, tls []htmlpage.Timeline) {
		var b bytes.Buffer
		if err := htmlpage.Write(&b, rep, tls); err != nil {
			t.Fatal(err)
		}
		got[name+" html"] = fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))
		j, err := json.Marshal(tls)
		if err != nil {
			t.Fatal(err)
		}
		got[name+" timelines"] = fmt.Sprintf("%x", sha256.Sum256(j))
	}
	// The goldens pinned are those the file lists: a golden added since
	// is a new page, not a changed one, and waits for the next -update-pages.
	want := map[string]string{}
	if !*updatePages {
		b, err := os.ReadFile(pagesFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			sum, name, _ := strings.Cut(l, "  ")
			want[name] = sum
		}
	}
	var paths []string
	for _, path := range goldenPaths(t) {
		if _, ok := want[filepath.ToSlash(strings.TrimPrefix(path, "../../"))+" html"]; ok || *updatePages {
			paths = append(paths, path)
		}
	}
	drawn := 0
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := loadHistory(t, string(b))
		suite, err := checkers.ForContract(checkers.DefaultContract(), checkers.DefaultNames(h.Meta.Mode)...)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(strings.TrimPrefix(path, "../../"))
		rep := report.New([]report.Run{report.FromCheck(name, h, suite.Check(h, h.Effects))})
		tls := htmlpage.Timelines(rep, map[string]*history.History{name: h})
		for _, tl := range tls {
			for _, l := range tl.Lanes {
				drawn += len(l.Bars)
			}
		}
		page(name, rep, tls)
	}
	rep, tls := goldenSweep(t, paths, 3, func(i int) bool { return i%7 == 3 })
	page("sweep", rep, tls)
	if drawn < 300 {
		t.Fatalf("the goldens' timelines draw %d attempts: the pages compare too little", drawn)
	}
	var lines []string
	for name, sum := range got {
		lines = append(lines, sum+"  "+name)
	}
	slices.Sort(lines)
	if *updatePages {
		if err := os.WriteFile(pagesFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for name, sum := range got {
		switch w, ok := want[name]; {
		case !ok:
			t.Errorf("%s: a page %s does not list", name, pagesFile)
		case w != sum:
			t.Errorf("%s: not the bytes it had", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: listed in %s but not made (a golden renamed or removed? go test ./report/htmlpage -run TestPages -update-pages)", name, pagesFile)
		}
	}
}

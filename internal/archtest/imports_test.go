package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/idemchaos/idemchaos"

// rule is what one package (or every package under a prefix ending in
// "/...") may import from the module; stdlibOnly forbids every import from
// outside the standard library besides those.
type rule struct {
	may        []string
	stdlibOnly bool
}

// infra is the infrastructure under internal/: it knows nothing of
// scenarios, faults, checkers or the harness.
var infra = []string{"internal/pgcluster", "internal/runenv", "internal/proc", "internal/proxy", "internal/ctxwait"}

// rules is ARCHITECTURE.md's table. Test files may import more (a test of
// the harness may load scenarios from disk); the rules are for the code.
var rules = map[string]rule{
	"history":                 {},
	"checkers":                {may: []string{"history", "internal/unionfind"}, stdlibOnly: true},
	"faults":                  {may: []string{"internal/ctxwait"}},
	"scenarios":               {may: []string{"checkers", "faults", "internal/suggest", "internal/addrgate"}},
	"reference":               {may: []string{"internal/suggest"}},
	"harness/driver":          {may: []string{"history", "internal/ctxwait", "internal/httptoken"}},
	"harness/oracle":          {may: []string{"history", "reference", "internal/addrgate"}},
	"harness/pgtest":          {may: []string{"internal/pgcluster", "internal/runenv"}},
	"harness/oracle/mysql":    {may: []string{"harness/oracle"}},
	"harness/oracle/sqlite":   {may: []string{"harness/oracle"}},
	"harness/broker":          {may: []string{"history", "internal/addrgate"}},
	"harness/broker/nats":     {may: []string{"harness/broker", "internal/addrgate"}},
	"harness/broker/rabbitmq": {may: []string{"harness/broker", "internal/addrgate", "internal/proc"}},
	"harness/broker/redis":    {may: []string{"harness/broker", "internal/addrgate", "internal/netaddr", "internal/proc"}},
	"harness/mariadbtest":     {may: []string{"harness/pgtest", "internal/mariadb"}},
	"harness": {may: append([]string{"checkers", "faults", "harness/driver", "harness/oracle", "harness/internal/sut", "harness/broker", "history", "reference", "scenarios",
		"internal/env", "internal/netaddr", "internal/addrgate", "internal/clientpath"}, infra...)},
	"harness/internal/sut":             {may: []string{"faults", "scenarios", "internal/addrgate", "internal/proxy"}},
	"harness/docker":                   {may: []string{"faults", "reference", "scenarios", "harness/internal/sut", "internal/dockerenv", "internal/proxy"}},
	"report":                           {may: []string{"checkers", "harness", "history"}},
	"harness/catchmatrix":              {may: []string{"harness", "reference", "scenarios"}},
	"report/htmlpage":                  {may: []string{"checkers", "history", "report"}},
	"cmd/idemchaos":                    {may: []string{"checkers", "harness", "harness/catchmatrix", "harness/docker", "harness/oracle/mysql", "harness/oracle/sqlite", "harness/broker/nats", "harness/broker/rabbitmq", "harness/broker/redis", "history", "reference", "report", "report/htmlpage", "scenarios", "cmd/idemchaos/internal/...", "internal/dockerenv", "internal/netaddr", "internal/addrgate", "internal/httptoken"}},
	"internal/env":                     {may: append([]string{"internal/netaddr", "internal/addrgate"}, infra...)},
	"internal/dockerenv":               {may: []string{"internal/pgcluster", "internal/proxy", "internal/runenv", "internal/netaddr", "internal/addrgate"}},
	"internal/pgcluster":               {may: []string{"internal/runenv", "internal/netaddr"}},
	"internal/mariadb":                 {may: []string{"internal/runenv", "internal/netaddr"}},
	"internal/runenv":                  {},
	"internal/proc":                    {},
	"internal/proxy":                   {},
	"internal/ctxwait":                 {},
	"internal/suggest":                 {},
	"internal/unionfind":               {stdlibOnly: true},
	"internal/httptoken":               {stdlibOnly: true},
	"internal/netaddr":                 {},
	"internal/addrgate":                {may: []string{"internal/netaddr"}, stdlibOnly: true},
	"internal/proctest":                {},
	"internal/dockerenvtest":           {may: []string{"internal/dockerenv"}},
	"internal/archtest":                {},
	"internal/modtidy":                 {},
	"internal/histgen":                 {may: []string{"history"}},
	"internal/faultschema":             {may: []string{"faults", "internal/faultschema"}}, // its gen.go imports it
	"cmd/idemchaos/internal/partcheck": {may: []string{"checkers", "history", "internal/unionfind"}},
	"cmd/idemchaos/internal/scaffold":  {},
	"cmd/idemchaos/internal/planfile":  {may: []string{"harness", "scenarios"}},
	"cmd/idemchaos/internal/recorder":  {may: []string{"history", "scenarios", "faults", "internal/clientpath"}},
	"internal/clientpath":              {may: []string{"faults", "history", "internal/httptoken"}},
	"cmd/idemchaos/internal/shard":     {may: []string{"report"}},
	"cmd/idemchaos/internal/together":  {may: []string{"history"}},
	"cmd/idemchaos/internal/leftover":  {may: []string{"internal/runenv", "internal/dockerenv"}},
	"internal/refbench":                {may: []string{"reference"}},
	"cmd/idemchaos/internal/bench": {may: append([]string{"checkers", "harness", "harness/catchmatrix", "harness/docker", "harness/driver", "harness/broker", "harness/broker/nats", "harness/broker/rabbitmq", "history", "scenarios", "internal/env", "internal/dockerenv",
		"internal/histgen", "cmd/idemchaos/internal/partcheck", "internal/refbench", "internal/mariadb", "examples/foreign", "examples/clients", "reference"}, infra...)},
	// A sample service uses only what a user of the module could: the
	// public packages, never internal ones.
	"examples/...": {may: []string{"examples/...", "harness", "harness/pgtest", "harness/mariadbtest", "harness/oracle/mysql", "harness/oracle/sqlite", "harness/broker", "harness/broker/nats", "harness/broker/rabbitmq", "harness/broker/redis", "checkers", "scenarios", "history"}},
}

// stdlib says whether an import path is the standard library's: its first
// element has no dot.
func stdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func ruleFor(pkg string) (rule, bool) {
	if r, ok := rules[pkg]; ok {
		return r, true
	}
	for k, r := range rules {
		if p, ok := strings.CutSuffix(k, "/..."); ok && (pkg == p || strings.HasPrefix(pkg, p+"/")) {
			return r, true
		}
	}
	return rule{}, false
}

func allowed(r rule, imp string) bool {
	for _, m := range r.may {
		if p, ok := strings.CutSuffix(m, "/..."); ok && (imp == p || strings.HasPrefix(imp, p+"/")) {
			return true
		}
		if m == imp {
			return true
		}
	}
	return false
}

// imports maps each package directory of the module (relative to its root)
// to the imports of its non-test files, parsed, not built.
func imports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			out[pkg][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every package follows its rule, and every package has one: a new
// package must be placed in ARCHITECTURE.md's table before it can land.
func TestImports_FollowTheArchitecture(t *testing.T) {
	t.Parallel()
	pkgs := imports(t, filepath.Join("..", ".."))
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk did not reach the module", len(pkgs))
	}
	var names []string
	for pkg := range pkgs {
		names = append(names, pkg)
	}
	slices.Sort(names)
	for _, pkg := range names {
		r, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("%s: no rule; add the package to ARCHITECTURE.md and to this test's table", pkg)
			continue
		}
		for imp := range pkgs[pkg] {
			own, isOwn := strings.CutPrefix(imp, module+"/")
			switch {
			case isOwn && !allowed(r, own):
				t.Errorf("%s imports %s, which ARCHITECTURE.md does not allow", pkg, own)
			case !isOwn && r.stdlibOnly && !stdlib(imp):
				t.Errorf("%s imports %s: it may import only the standard library and %v", pkg, imp, r.may)
			}
		}
	}
}

// The rules themselves hold what ARCHITECTURE.md promises: checkers are
// pure, no infrastructure knows the harness, and the command reaches the
// infrastructure only through the harness.
func TestImports_RulesKeepThePromises(t *testing.T) {
	t.Parallel()
	never := map[string][]string{
		"checkers":        {"harness", "scenarios", "faults", "reference"},
		"faults":          {"harness", "scenarios", "reference"},
		"cmd/idemchaos":   {"internal/env", "internal/pgcluster", "internal/proc", "internal/proxy", "internal/runenv"},
		"report":          {"internal/env", "scenarios", "faults", "report/htmlpage"},
		"report/htmlpage": {"internal/env", "scenarios", "faults", "harness"},
		// The docker environment registers itself from its own package:
		// the harness never links it (see deps_test.go).
		"harness":              {"harness/docker", "internal/dockerenv", "harness/catchmatrix"},
		"harness/internal/sut": {"harness", "harness/docker", "internal/dockerenv"},
	}
	for _, p := range infra {
		never[p] = []string{"harness", "scenarios", "faults", "checkers", "reference", "history"}
	}
	for pkg, forbidden := range never {
		r, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("%s: no rule", pkg)
		}
		for _, f := range forbidden {
			if allowed(r, f) {
				t.Errorf("the rule for %s allows %s", pkg, f)
			}
		}
	}
}

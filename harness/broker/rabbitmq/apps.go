package rabbitmq

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Why a node has a home of its own (runHome): RabbitMQ 3.10's boot looks
// for its boot steps in every module of every loaded application and for
// its feature flags in every module of rabbit's own, loading each module on
// the way (Module:module_info(attributes)), one by one, each looked for
// along the whole code path. The start script puts all of the package's 70
// applications on that path (ERL_LIBS=$RABBITMQ_HOME/plugins), of which
// rabbit needs some twenty. Measured on the 2-core machine here: loading
// those ~940 modules took 3.1 s one by one along the package's code path
// (93 directories), 2.5 s along rabbit's own (44), 1.4 s in parallel; a
// node took 7.5 s to start, 4.5 s with rabbit's code path and no
// Cuttlefish (the classic configuration file, node.go), 3.0 s with the
// preload too.
//
// So the node gets a RABBITMQ_HOME of its own (the start script derives it
// from RABBITMQ_SCRIPTS_DIR): sbin/ links the package's scripts, plugins/
// links only rabbit and the applications it depends on (no rabbitmq_*
// plugin but rabbitmq_prelaunch, which rabbit needs); and preload_modules,
// which the VM evaluates before rabbit boots, loads the modules of those
// applications (OTP's included) in a process of its own, an application
// at a time and each one's modules in parallel, while rabbit's prelaunch
// reads its configuration and starts the distribution, so that rabbit
// finds most of them loaded.

// rootApps are the applications a node runs: rabbit, and mnesia, which
// rabbit starts by itself rather than as a dependency. They and their
// dependencies are the applications the node loads.
var rootApps = []string{"rabbit", "mnesia"}

// app is an Erlang application found on disk: its directory and what its
// .app file says.
type app struct {
	name    string
	dir     string   // <name>-<vsn>
	deps    []string // applications, included_applications
	modules []string
}

var (
	appListRe = regexp.MustCompile(`\{\s*(applications|included_applications|modules)\s*,\s*\[([^\]]*)\]`)
	appNameRe = regexp.MustCompile(`^(.+)-[0-9][^-]*$`)
)

// readApps reads the applications under lib (one directory per
// application, <name>-<vsn>/ebin/<name>.app). Where two versions are
// there, the last by name wins, as the code server would pick it.
func readApps(lib string) (map[string]app, error) {
	ents, err := os.ReadDir(lib)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	out := map[string]app{}
	for _, e := range ents {
		m := appNameRe.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		dir := filepath.Join(lib, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "ebin", m[1]+".app"))
		if err != nil {
			continue // not an application (erts-*, a README)
		}
		a := app{name: m[1], dir: dir}
		for _, l := range appListRe.FindAllStringSubmatch(stripComments(string(b)), -1) {
			var items []string
			for _, it := range strings.Split(l[2], ",") {
				if it = strings.Trim(strings.TrimSpace(it), "'"); it != "" {
					items = append(items, it)
				}
			}
			if l[1] == "modules" {
				if a.modules == nil { // the first: an env value could hold another
					a.modules = items
				}
			} else {
				a.deps = append(a.deps, items...)
			}
		}
		out[a.name] = a
	}
	return out, nil
}

// stripComments drops Erlang's comments (% to the end of the line, OTP's
// .app files have them inside their module lists) outside strings and
// quoted atoms.
func stripComments(src string) string {
	var b strings.Builder
	var quote byte // the open string's or quoted atom's, or 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote == 0 && c == '%':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
			continue // the newline stays
		case quote != 0 && c == '\\' && i+1 < len(src):
			b.WriteByte(c)
			i++
			c = src[i]
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		}
		b.WriteByte(c)
	}
	return b.String()
}

// closure is roots and every application they depend on, transitively,
// in the order a start would load them (dependencies first).
func closure(roots []string, apps map[string]app) ([]app, error) {
	var out []app
	seen := map[string]bool{}
	var visit func(name, from string) error
	visit = func(name, from string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		a, ok := apps[name]
		if !ok {
			return fmt.Errorf("rabbitmq: application %s (needed by %s) is in neither RabbitMQ's nor Erlang's lib directory", name, from)
		}
		deps := append([]string(nil), a.deps...)
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		out = append(out, a)
		return nil
	}
	for _, r := range roots {
		if err := visit(r, "the node"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// erlangLib is Erlang/OTP's lib directory: <root>/lib next to the bin/erl
// the start script runs.
func erlangLib() (string, error) {
	erl, err := exec.LookPath("erl")
	if err != nil {
		return "", fmt.Errorf("%w: erl (%w)", ErrNotInstalled, err)
	}
	if erl, err = filepath.EvalSymlinks(erl); err != nil {
		return "", fmt.Errorf("rabbitmq: %w", err)
	}
	lib := filepath.Join(filepath.Dir(filepath.Dir(erl)), "lib")
	if _, err := os.Stat(lib); err != nil {
		return "", fmt.Errorf("%w: Erlang's lib directory (%w)", ErrNotInstalled, err)
	}
	return lib, nil
}

// runHome builds the node's RABBITMQ_HOME under dir from the package's
// (script is its sbin/rabbitmq-server): sbin/ with links to the package's
// scripts, plugins/ with links to rabbit's applications, and dir's
// preloadFile. It returns the home's sbin directory (RABBITMQ_SCRIPTS_DIR)
// and plugins directory (RABBITMQ_PLUGINS_DIR).
func runHome(dir, script string) (sbin, plugins string, err error) {
	real, err := filepath.EvalSymlinks(script)
	if err != nil {
		return "", "", fmt.Errorf("rabbitmq: %w", err)
	}
	pkgSbin := filepath.Dir(real)
	pkgPlugins := filepath.Join(filepath.Dir(pkgSbin), "plugins")
	rabbitApps, err := readApps(pkgPlugins)
	if err != nil {
		return "", "", err
	}
	otpLib, err := erlangLib()
	if err != nil {
		return "", "", err
	}
	otpApps, err := readApps(otpLib)
	if err != nil {
		return "", "", err
	}
	all := map[string]app{}
	for _, m := range []map[string]app{otpApps, rabbitApps} { // RabbitMQ's own copy wins
		for k, v := range m {
			all[k] = v
		}
	}
	need, err := closure(rootApps, all)
	if err != nil {
		return "", "", err
	}
	home := filepath.Join(dir, "rabbitmq-home")
	sbin, plugins = filepath.Join(home, "sbin"), filepath.Join(home, "plugins")
	if err := os.RemoveAll(home); err != nil { // a node started in dir before
		return "", "", fmt.Errorf("rabbitmq: %w", err)
	}
	for _, d := range []string{sbin, plugins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", fmt.Errorf("rabbitmq: %w", err)
		}
	}
	scripts, err := os.ReadDir(pkgSbin)
	if err != nil {
		return "", "", fmt.Errorf("rabbitmq: %w", err)
	}
	for _, s := range scripts {
		if err := os.Symlink(filepath.Join(pkgSbin, s.Name()), filepath.Join(sbin, s.Name())); err != nil {
			return "", "", fmt.Errorf("rabbitmq: %w", err)
		}
	}
	for _, a := range need {
		if _, ok := rabbitApps[a.name]; !ok {
			continue // OTP's: on the VM's own code path
		}
		if err := os.Symlink(a.dir, filepath.Join(plugins, filepath.Base(a.dir))); err != nil {
			return "", "", fmt.Errorf("rabbitmq: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, preloadFile), []byte(preloadScript(need)), 0o644); err != nil {
		return "", "", fmt.Errorf("rabbitmq: %w", err)
	}
	return sbin, plugins, nil
}

// preloadFile is the script (Erlang expressions) the VM evaluates before
// rabbit boots, in the node's directory (the VM's working directory).
// ERL_AFLAGS, which carries the expression that runs it, is split at
// spaces and loses its quotes, so the name is a bare atom's.
const preloadFile = "preload_modules"

// preloadEval is the VM's argument that runs preloadFile in a process of
// its own.
const preloadEval = "-eval spawn(file,script,[" + preloadFile + "])"

// preloadScript is preloadFile for apps: rabbit's own applications first
// (its feature flags are looked for first, in rabbit, rabbit_common and
// rabbitmq_prelaunch), then the others. code:ensure_modules_loaded
// prepares a batch's modules in parallel and skips those loaded by then,
// so a module rabbit loaded (or generated: the feature flag registry, left
// out anyway) in the meantime is left as it is.
func preloadScript(apps []app) string {
	first := map[string]bool{"rabbit": true, "rabbit_common": true, "rabbitmq_prelaunch": true}
	var b strings.Builder
	b.WriteString("%% Written by idemchaos: loads the node's modules while it boots (see apps.go).\n")
	b.WriteString("Batches = [\n")
	var order []app
	for _, pass := range []bool{true, false} {
		for _, a := range apps {
			if first[a.name] == pass {
				order = append(order, a)
			}
		}
	}
	for i, a := range order {
		var mods []string
		for _, m := range a.modules {
			if m != "rabbit_ff_registry" {
				mods = append(mods, "'"+strings.ReplaceAll(m, "'", `\'`)+"'")
			}
		}
		sep := ","
		if i == len(order)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %%%% %s\n  [%s]%s\n", a.name, strings.Join(mods, ","), sep)
	}
	b.WriteString("],\n[code:ensure_modules_loaded(Ms) || Ms <- Batches].\n")
	return b.String()
}

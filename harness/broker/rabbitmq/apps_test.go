package rabbitmq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The node's plugins directory holds rabbit and what it depends on from
// the package — rabbitmq_prelaunch among them — and no other rabbitmq_*
// plugin; the preload script names the modules of OTP's applications
// rabbit needs too, never the generated feature flag registry. A second
// node in the same directory builds it again.
func TestRunHome_RabbitsApplicationsOnly(t *testing.T) {
	script, err := findExe(serverScripts, "rabbitmq-server")
	if err != nil {
		t.Fatal(err) // test.sh installs rabbitmq-server: a missing one is a broken install
	}
	dir := t.TempDir()
	for range 2 {
		if _, _, err := runHome(dir, script); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "rabbitmq-home", "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range ents {
		name := appNameRe.FindStringSubmatch(e.Name())
		if name == nil {
			t.Fatalf("plugins/%s: not <app>-<vsn>", e.Name())
		}
		got[name[1]] = true
		if strings.HasPrefix(name[1], "rabbitmq_") && name[1] != "rabbitmq_prelaunch" {
			t.Errorf("plugins/%s: a plugin rabbit does not depend on", e.Name())
		}
	}
	for _, want := range []string{"rabbit", "rabbit_common", "rabbitmq_prelaunch", "ra", "osiris", "cuttlefish", "jsx"} {
		if !got[want] {
			t.Errorf("plugins: no %s (has %v)", want, got)
		}
	}
	if got["ssl"] || got["kernel"] {
		t.Errorf("plugins has OTP's applications: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "rabbitmq-home", "sbin", "rabbitmq-env")); err != nil {
		t.Errorf("sbin: %v", err)
	}
	pre, err := os.ReadFile(filepath.Join(dir, preloadFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"'rabbit_boot_steps'", "'ssl'", "'mnesia'", "'ra_server'"} {
		if !strings.Contains(string(pre), want) {
			t.Errorf("%s does not load %s", preloadFile, want)
		}
	}
	if strings.Contains(string(pre), "'rabbit_ff_registry'") {
		t.Errorf("%s loads rabbit_ff_registry, which rabbit generates", preloadFile)
	}
}

// An application nothing provides is named with who needs it.
func TestClosure_MissingApplication(t *testing.T) {
	apps := map[string]app{
		"rabbit": {name: "rabbit", deps: []string{"kernel", "ra"}},
		"kernel": {name: "kernel"},
		"ra":     {name: "ra", deps: []string{"kernel", "aten"}},
	}
	_, err := closure([]string{"rabbit"}, apps)
	if err == nil || !strings.Contains(err.Error(), "application aten (needed by ra)") {
		t.Fatalf("err = %v, want aten needed by ra", err)
	}
	apps["aten"] = app{name: "aten", deps: []string{"kernel"}}
	got, err := closure([]string{"rabbit"}, apps)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range got {
		names = append(names, a.name)
	}
	if strings.Join(names, " ") != "kernel aten ra rabbit" {
		t.Errorf("closure = %v, want dependencies first: kernel aten ra rabbit", names)
	}
}

// Comments go, a % in a string or quoted atom stays.
func TestStripComments(t *testing.T) {
	in := "{modules, [a, %% TLS\n b, 'c%d', %x\n e]}, {description, \"50% \\\" %\"} % end"
	want := "{modules, [a, \n b, 'c%d', \n e]}, {description, \"50% \\\" %\"} "
	if got := stripComments(in); got != want {
		t.Errorf("stripComments:\n got %q\nwant %q", got, want)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestDemo_EnvChoices: demo runs the reference itself, so an environment
// that only drives someone else's service is refused before anything
// starts, with one line naming the choices.
func TestDemo_EnvChoices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want string }{
		{"external", "only local or docker"},
		{"kubernetes", "want auto, local, external or docker"},
	} {
		code, _, stderr := runMain(t, "demo", "--env", tc.env)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("demo --env %s: exit %d, stderr %q; want exit %d and one line saying %q", tc.env, code, stderr, ExitUsage, tc.want)
		}
	}
}

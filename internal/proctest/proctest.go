// Package proctest holds the process checks the tests of several packages
// share: whether a process still runs, and a bounded wait for it to go.
package proctest

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Alive reports whether pid runs: it exists and is neither a zombie nor
// dead (a zombie waits for a parent that, in a container, may never reap
// it; it runs nothing).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself
	// hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// TB is the part of testing.TB WaitGone uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitGone polls, for at most within, until pid no longer runs, and fails
// tb with what (e.g. "postmaster 42 survived the failed test binary")
// otherwise. Polling is the only signal there is: the process is not the
// test's child, so it cannot be waited for.
func WaitGone(tb TB, pid int, within time.Duration, what string) {
	tb.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for Alive(pid) {
		if time.Now().After(deadline) {
			tb.Fatalf("%s", what)
			return
		}
		<-tick.C
	}
}

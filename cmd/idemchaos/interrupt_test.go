package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Interrupting a run (Ctrl-C cancels the command's context) stops every
// process, removes the run directory, keeps the partial history and exits 130.
func TestRun_InterruptKeepsHistoryAndCleansUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(historiesEnv, filepath.Join(tmp, "idemchaos-histories"))
	runDirs := func() map[string]bool {
		// Only this process's run directories: other test binaries (go test
		// runs packages in parallel) start and end runs of their own.
		dirs, _ := filepath.Glob(filepath.Join("/dev/shm", "idemchaos-*", "run-"+strconv.Itoa(os.Getpid())+"-*"))
		m := map[string]bool{}
		for _, d := range dirs {
			m[d] = true
		}
		return m
	}
	before := runDirs() // the shared test cluster's run is not the command's
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }}
	done := make(chan int, 1)
	go func() {
		done <- m.Exit(m.Run(ctx, []string{"run", "-s", "../../scenarios/crash-mid-request.yaml", "--mutant", "no-lease", "--reruns", "0", "--shrink=false"}))
	}()
	// The stimulus: interrupt once traffic is on the wire (the no-lease
	// clients then keep asking for over a second: the decision bound after
	// the restart).
	histories := filepath.Join(tmp, "idemchaos-histories")
	deadline := time.Now().Add(30 * time.Second)
	for !sentSomething(histories) {
		if time.Now().After(deadline) {
			t.Fatalf("no traffic within 30s; stderr:\n%s", errb.String())
		}
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before it could be interrupted; stderr:\n%s", code, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted run did not end within 30s")
	}
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, errb.String())
	}
	kept := regexp.MustCompile(`partial history kept: (\S+)`).FindStringSubmatch(errb.String())
	if kept == nil {
		t.Fatalf("no partial history named; stderr:\n%s", errb.String())
	}
	if b, err := os.ReadFile(kept[1]); err != nil || !bytes.Contains(b, []byte(`"type":"invoke"`)) {
		t.Fatalf("partial history %s: %v, %d bytes", kept[1], err, len(b))
	}
	for d := range runDirs() {
		if !before[d] {
			t.Fatalf("run directory left behind: %s", d)
		}
	}
	if kids := childrenWithEnv("IDEMCHAOS_CHILD"); len(kids) > 0 {
		t.Fatalf("reference processes left behind: %v", kids)
	}
}

func sentSomething(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(`"type":"invoke"`)) {
			return true
		}
	}
	return false
}

// childrenWithEnv lists this process's children whose environment holds name.
func childrenWithEnv(name string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	me := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// The parent pid is the 4th field, after the parenthesised name.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		if env, _ := os.ReadFile(filepath.Join(p, "environ")); bytes.Contains(env, []byte(name+"=")) {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

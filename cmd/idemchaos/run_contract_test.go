package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run's contract flags change what the run judges by and what its history
// says: the reference answers a reused key 422, which the stripe contract
// (400 on reuse) calls a violation; check then agrees from the meta alone.
func TestRun_ContractFlagsJudgeAndReachTheHistory(t *testing.T) {
	dir := t.TempDir()
	plain, stripe := filepath.Join(dir, "ietf.jsonl"), filepath.Join(dir, "stripe.jsonl")
	if code, out, errb := runMain(t, "run", "-s", "../../scenarios/key-reuse.yaml", "--reruns", "0", "--shrink=false", "--history", plain); code != 0 {
		t.Fatalf("ietf (the scenario's own contract): exit %d, want 0\n%s%s", code, out, errb)
	}
	code, out, errb := runMain(t, "run", "-s", "../../scenarios/key-reuse.yaml", "--reruns", "0", "--shrink=false", "--profile", "stripe", "--history", stripe)
	if code != ExitViolation || !strings.Contains(out, "the stripe contract says 400") {
		t.Fatalf("--profile stripe: exit %d, want 1 naming the stripe contract\n%s%s", code, out, errb)
	}
	b, err := os.ReadFile(stripe)
	if err != nil {
		t.Fatal(err)
	}
	meta, _, _ := strings.Cut(string(b), "\n")
	if !strings.Contains(meta, `"stripe"`) {
		t.Fatalf("the history's meta does not carry the run's contract: %s", meta)
	}
	if code, out, _ := runMain(t, "check", stripe); code != ExitViolation {
		t.Fatalf("check of the stripe run: exit %d, want 1 (the meta's contract)\n%s", code, out)
	}
	if code, out, _ := runMain(t, "check", "--profile", "ietf", stripe); code != 0 {
		t.Fatalf("check --profile ietf of the same history: exit %d, want 0\n%s", code, out)
	}
}

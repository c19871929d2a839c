// Package clients is the client corpus: order-creating clients written the
// way their users write them — on hashicorp/go-retryablehttp, on
// avast/retry-go, with curl --retry, with Python's urllib3, and a
// hand-written Go SDK (ordersdk) with one flag per caller-side flaw — each
// with its ground truth: which client invariants it keeps and which it
// breaks, measured without idemchaos by TestTruth against a scripted
// server, and written here as data.
//
// They are the evidence for idemchaos's client verdicts: a client must be
// caught by exactly the invariants its truth says it breaks, and clean on
// the others.
package clients

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
)

// Invariants are the client invariants, in the order reports list them.
var Invariants = []string{
	"key-stable", "payload-stable", "key-per-intent", "keyed-retry", "no-retry-permanent",
	"retry-after-honoured", "backoff", "bounded", "truthful-outcome", "exactly-once",
}

// Budget is the attempts per intent every client of the corpus declares
// (the first attempt and up to four retries).
const Budget = 5

// Client is one client of the corpus.
type Client struct {
	// Name names the client in tests and reports.
	Name string
	// Lang is what it is written in, and on what.
	Lang string
	// Build is the Go package to build ("" for scripts), relative to the
	// module root.
	Build string
	// Script is the program to run when Build is empty, relative to the
	// module root.
	Script string
	// Args are its command-line arguments.
	Args []string
	// Breaks maps each invariant the client breaks to why, in one line.
	// An invariant not listed is kept.
	Breaks map[string]string
	// Keyless says the client sends no key: its upstream must execute
	// keyless requests.
	Keyless bool
}

// Command is the argv that runs the client, given the module root and the
// directory Go clients were built into.
func (c Client) Command(root, bin string) []string {
	if c.Build != "" {
		return append([]string{filepath.Join(bin, filepath.Base(c.Build))}, c.Args...)
	}
	return append([]string{filepath.Join(root, c.Script)}, c.Args...)
}

// Wrong sets the client invariants a run caught against the client's
// truth: those caught that it keeps (false alarms) and those it breaks
// that were not caught (misses), in the order of Invariants.
func (c Client) Wrong(caught []string) (falseAlarms, misses []string) {
	for _, inv := range Invariants {
		switch broke, truth := slices.Contains(caught, inv), c.Breaks[inv] != ""; {
		case broke && !truth:
			falseAlarms = append(falseAlarms, inv)
		case !broke && truth:
			misses = append(misses, inv)
		}
	}
	return falseAlarms, misses
}

// Build builds the corpus's Go clients into bin with the go command, from
// the module root (Command then finds them there).
func Build(ctx context.Context, root, bin string) error {
	var pkgs []string
	for _, c := range Cases() {
		if c.Build != "" && !slices.Contains(pkgs, "./"+c.Build) {
			pkgs = append(pkgs, "./"+c.Build)
		}
	}
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin + "/"}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the client corpus: %w\n%s", err, out)
	}
	return nil
}

// Correct says the client keeps every invariant.
func (c Client) Correct() bool { return len(c.Breaks) == 0 }

const (
	dir     = "examples/clients/"
	sdk     = dir + "ordersdk/cmd/checkout"
	lostAck = "truthful-outcome"
	// reportsFailure is the outcome lie of a client that gives up: every
	// attempt ended after the upstream executed, and it says "failed".
	reportsFailure = "after every attempt ended after execution (502, reset), it exits 'failed' although the order exists"
)

// Cases lists the corpus: the correct SDK first, then the real libraries,
// then one flaw of the SDK per invariant the libraries leave uncovered.
func Cases() []Client {
	return []Client{
		{Name: "ordersdk", Lang: "Go, hand-written SDK", Build: sdk},

		{Name: "retryablehttp", Lang: "Go, hashicorp/go-retryablehttp", Build: dir + "retryablehttp",
			Breaks: map[string]string{
				"backoff": "DefaultBackoff is min·2^n with no jitter: clients hit by one outage retry in lockstep",
				lostAck:   reportsFailure,
			}},
		{Name: "retrygo", Lang: "Go, avast/retry-go", Build: dir + "retrygo",
			Breaks: map[string]string{
				"key-stable":           "the closure mints the Idempotency-Key, so every retry carries a new one",
				"no-retry-permanent":   "the closure returns an error for every non-2xx, and retry.Do retries it",
				"retry-after-honoured": "Retry-After is never read: the next attempt follows retry-go's own delay",
				"exactly-once":         "a retry after a lost answer has a new key: a second order",
				lostAck:                reportsFailure,
			}},
		{Name: "curl", Lang: "POSIX sh, curl --retry", Script: dir + "curl/create-order.sh",
			Breaks: map[string]string{
				"backoff": "curl waits 1 s, doubling, with no jitter",
				lostAck:   "a reset after the request was sent is not retried: exit 56, 'failed', although the order exists",
			}},
		{Name: "urllib3", Lang: "Python, Debian's python3-urllib3 Retry", Script: dir + "urllib3/create_order.py",
			Breaks: map[string]string{
				"backoff": "urllib3 1.26 backs off backoff_factor·2^(n-1) with no jitter (and no wait before the first retry)",
				lostAck:   reportsFailure,
			}},

		{Name: "ordersdk-key-from-body", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-key-from-body"},
			Breaks: map[string]string{
				"key-per-intent": "the key is a hash of the body: two real orders with the same items share it",
				"exactly-once":   "the second of two equal orders is answered with the first one's replay: it is never created",
				lostAck:          "that replay is reported as the second order created",
			}},
		{Name: "ordersdk-no-key", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-no-key"}, Keyless: true,
			Breaks: map[string]string{
				"keyed-retry":  "a POST without a key is re-sent after a 502 or a lost answer",
				"exactly-once": "each blind re-send after execution is a second order",
			}},
		{Name: "ordersdk-retry-everything", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-retry-everything"},
			Breaks: map[string]string{
				"no-retry-permanent": "every non-2xx is retried as it is, 422 and 403 included",
			}},
		{Name: "ordersdk-ignore-retry-after", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-ignore-retry-after"},
			Breaks: map[string]string{
				"retry-after-honoured": "a fixed 50 ms backoff, whatever Retry-After asks",
				"backoff":              "the fixed backoff never grows",
			}},
		{Name: "ordersdk-stamp-each-attempt", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-stamp-each-attempt"},
			Breaks: map[string]string{
				"payload-stable": "each attempt's body carries its own send time",
				lostAck:          "the retry's new payload under the same key is refused (422): it exits 'failed' although the first attempt created the order",
			}},
		{Name: "ordersdk-timeout-is-failure", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-timeout-is-failure"},
			Breaks: map[string]string{
				lostAck: "when every attempt timed out or was cut after sending, it reports 'failed', not 'unknown'",
			}},
		{Name: "ordersdk-layered", Lang: "Go, hand-written SDK", Build: sdk, Args: []string{"-layered", "3"},
			Breaks: map[string]string{
				"bounded": "a retry loop around the SDK's own: 3 × 4 attempts against a budget of 5",
				"backoff": "each outer round restarts the SDK's backoff from its shortest delay",
			}},
	}
}

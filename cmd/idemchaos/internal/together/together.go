// Package together joins the histories that several drivers recorded
// against one service at once into one history the checkers judge as one
// system.
//
// Clocks: every history's ns values count from its own process's start, so
// values from different files are not comparable, and no rule may order
// events of two files by them. Join therefore lays the files end to end on
// one axis (file 2 starts after file 1's last event), so that every rule
// that compares times — in-flight-conflict's overlapping attempts and the
// faults in force during one, eventually-decided's decision windows, heals
// and "other keys succeeded meanwhile" — only ever pairs events of the same
// file. What joins the files is what the service answered and produced:
// the effects, read once (deduplicated by tenant and effect), are judged
// against the attempts of every file.
//
// A (tenant, key) sent by two files would need an order across processes
// that only wall clocks could give, so Join refuses it; idemchaos drivers
// never do it (the keys of a run against a URL carry a per-run nonce).
package together

import (
	"fmt"
	"math"
	"strconv"

	"github.com/idemchaos/idemchaos/history"
)

// Numbering says how a file's op and client numbers were renumbered:
// op n of file i (from 1) became i·Stride + n, and so did client n.
type Numbering struct {
	OpStride, ClientStride int64
}

// Join joins hs (named by names, for errors) into one history. The
// histories are modified in place: their attempts and faults move into the
// result.
func Join(hs []*history.History, names []string) (*history.History, Numbering, error) {
	if len(hs) == 0 {
		return nil, Numbering{}, fmt.Errorf("together: no histories")
	}
	owner := map[[2]string]int{}
	var maxOp, maxClient int64
	for i, h := range hs {
		for j := range h.Attempts {
			a := &h.Attempts[j]
			maxOp, maxClient = max(maxOp, a.Op), max(maxClient, int64(a.Client))
			if a.Key == "" {
				continue
			}
			k := [2]string{a.Tenant, a.Key}
			if o, ok := owner[k]; ok && o != i {
				return nil, Numbering{}, fmt.Errorf("key %q of tenant %q was sent by both %s and %s: judged together, their order could only come from two processes' clocks; give each driver its own keys", a.Key, a.Tenant, names[o], names[i])
			}
			owner[k] = i
		}
		for _, f := range h.Faults {
			maxOp = max(maxOp, f.Op)
		}
	}
	num := Numbering{OpStride: stride(maxOp), ClientStride: stride(maxClient)}
	out := &history.History{Meta: hs[0].Meta, IntentsKnown: true}
	// The files' steps ran at once against one system: judged together
	// they are one step, which expects every invariant to hold and whose
	// budget ran out if any file's did.
	var budget int64
	for i, h := range hs {
		for _, st := range h.Steps {
			if st.Expect != "clean" {
				return nil, Numbering{}, fmt.Errorf("%s: step %q expects %s violated: judged together, the files are one run that expects every invariant to hold; check it alone", names[i], st.Name, st.Expect)
			}
			budget = max(budget, st.MaxRequests)
		}
		if h.Environment != "" {
			out.Environment = join(out.Environment, names[i]+": "+h.Environment)
		}
	}
	if budget > 0 {
		out.Steps = []history.Step{{Expect: "clean", MaxRequests: budget}}
	}
	var base int64 // where the current file starts on the joined axis
	seen := map[[2]string]bool{}
	for i, h := range hs {
		opBase, clientBase := int64(i+1)*num.OpStride, int64(i+1)*num.ClientStride
		tag := "d" + strconv.Itoa(i+1) + "/"
		for j := range h.Attempts {
			a := &h.Attempts[j]
			a.Op += opBase
			a.Client += int(clientBase)
			a.Invoke += base
			if a.Complete >= 0 {
				a.Complete += base
			}
			if h.IntentsKnown {
				a.Intent = tag + a.Intent // ground-truth intents ("i3") repeat across drivers
			}
		}
		out.Attempts = append(out.Attempts, h.Attempts...)
		for _, f := range h.Faults {
			if f.Op != 0 {
				f.Op += opBase
			}
			f.NS += base
			out.Faults = append(out.Faults, f)
		}
		for _, e := range h.Effects {
			k := [2]string{e.Tenant, e.ID}
			if seen[k] {
				continue
			}
			seen[k] = true
			if o, ok := owner[[2]string{e.Tenant, e.Key}]; ok && e.Intent != "" && hs[o].IntentsKnown {
				e.Intent = "d" + strconv.Itoa(o+1) + "/" + e.Intent
			}
			out.Effects = append(out.Effects, e)
		}
		for _, r := range h.Oracle {
			r.NS += base
			out.Oracle = append(out.Oracle, r)
		}
		out.Truncated = out.Truncated || h.Truncated
		if out.Interrupted == "" && h.Interrupted != "" {
			out.Interrupted = names[i] + ": " + h.Interrupted
		}
		out.EffectsKnown = out.EffectsKnown || h.EffectsKnown
		out.IntentsKnown = out.IntentsKnown && h.IntentsKnown
		out.Events += h.Events
		out.Skipped += h.Skipped
		base += h.End + 1
		h.Attempts, h.Faults, h.Effects = nil, nil, nil
	}
	// The effects were read after every driver's traffic: they sit after
	// the last event, as a run's own do.
	for j := range out.Effects {
		out.Effects[j].NS = base + int64(j)
	}
	out.End = base + int64(len(out.Effects))
	return out, num, nil
}

// stride is the power of ten above n, so that a renumbered op reads as
// its file and its number: op 2017 is op 17 of the second file.
func stride(n int64) int64 {
	s := int64(10)
	for s <= n && s < math.MaxInt64/100 {
		s *= 10
	}
	return s
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

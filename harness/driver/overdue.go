package driver

// A key is overdue when eventually-decided's verdict on it can only be a
// violation, whatever the client does next. The checker starts a key's
// clock at its first attempt sent at or after the last heal and named by
// no fault; a key asked for the decision bound since then without a
// definite answer is a violation, and once no fault can heal any more
// before the traffic ends (Config.Settled), nothing the client sends
// later moves that clock: a later answer is late, a later 409 is still
// undecided. Retrying such a key only spends the run's time — a
// lease-less "processing" row left by a crash answers 409 until the retry
// budget runs out — so the driver stops there, which is also the earliest
// moment the history proves the violation. A service that decides keys
// within the bound never has an overdue key: the rule changes nothing
// about a run that passes.

// keyClock is what one intent has sent, as the checker will read it.
type keyClock struct {
	sent []clocked
}

type clocked struct {
	op, invoked int64
	aimed       bool
	decided     bool // answered with a success or a rejection
}

// add notes an attempt, if it was recorded.
func (c *keyClock) add(r result, inFlight int) {
	if r.invoked > 0 {
		c.sent = append(c.sent, clocked{op: r.op, invoked: r.invoked, aimed: r.aimed, decided: decision(r.status, inFlight)})
	}
}

// decision says an answer decides a key for eventually-decided: any 2xx,
// or a status that is not "try again" (5xx, 408, the in-flight status,
// 425, 429). No answer (status 0) decides nothing.
func decision(status, inFlight int) bool {
	switch {
	case status == 0:
		return false
	case status >= 200 && status < 300:
		return true
	case status >= 500 || status == 408 || status == inFlight || status == 425 || status == 429:
		return false
	}
	return true
}

// overdueable says whether the rule may judge intent in: its key is the
// key of every attempt (not a new key per retry) and of no other intent
// of the plan (another intent's answer may decide the key).
func (d *runner) overdueable(in *Intent) bool {
	return d.cfg.DecisionBound > 0 && d.cfg.Settled != nil && in.Key != "" &&
		d.cfg.Model != KeyPerAttempt && !d.shared[in.Tenant+"\x00"+in.Key]
}

// overdue says the intent's key is overdue (see the top of this file).
func (d *runner) overdue(c *keyClock) bool {
	if !d.cfg.Settled() {
		return false
	}
	first, last := int64(-1), int64(-1)
	for _, a := range c.sent {
		if a.aimed || !d.cfg.Recorder.evidence(a.op, a.invoked) {
			continue
		}
		if a.decided {
			return false
		}
		if first < 0 || a.invoked < first {
			first = a.invoked
		}
		last = max(last, a.invoked)
	}
	return first >= 0 && last-first >= int64(d.cfg.DecisionBound)
}

// sharedKeys lists the keys (tenant NUL key) that more than one intent uses.
func sharedKeys(intents []Intent) map[string]bool {
	n := make(map[string]int, len(intents))
	for i := range intents {
		if k := intents[i].Key; k != "" {
			n[intents[i].Tenant+"\x00"+k]++
		}
	}
	shared := map[string]bool{}
	for k, c := range n {
		if c > 1 {
			shared[k] = true
		}
	}
	return shared
}

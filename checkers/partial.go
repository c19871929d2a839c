package checkers

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// MarshalPartial encodes a result of a part of a history (checked with
// [WithGlobals]) with everything [Merge] needs of it: the counts behind its
// verdict and the questions its violations leave to the whole history. A
// machine that checked one partition sends it; the one that merges reads it
// back with [UnmarshalPartial]. Gob rather than JSON: explanations quote
// response bodies, whose bytes must come back exactly, valid UTF-8 or not.
func MarshalPartial(r Part) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(wireOf(r)); err != nil {
		return nil, fmt.Errorf("encode partial result %s: %w", r.Name, err)
	}
	return b.Bytes(), nil
}

// UnmarshalPartial decodes what [MarshalPartial] encoded.
func UnmarshalPartial(p []byte) (Part, error) {
	var w wireResult
	if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&w); err != nil {
		return Part{}, fmt.Errorf("decode partial result: %w", err)
	}
	return w.result(), nil
}

// The wire types mirror Part with its unexported state made exported,
// as gob needs; they are private so that the state stays the package's.
type wireResult struct {
	Name       string
	Verdict    Verdict
	Violations []wireViolation
	Reason     string
	Checked    int
	Results    []wireResult
	T          wireTally
}

type wireViolation struct {
	V    Violation
	Twin *wireTwin // the twin its part asks the whole for (exactly-once)
}

type wireTwin struct {
	Tenant, Method, Path string
	Body                 uint64
	Unit                 string
}

type wireTally struct {
	Early           string
	NoCrash, Unread bool
	Orphans         int
	Unlearned       int
	Refuse          int
	Undecidable     int
	Bound, Budget   time.Duration
	Left, Keys      int
	LooseSeen       bool
	Endpoints       []wireEndpoint
	Stripped        []wireStripped
	HeaderNames     []string // the names wireCand.Headers index
	HasEndpoints    bool     // nil is how a result says it kept no tallies
	Client          bool
	Unattributed    int
	Unknowns        int
	Silent          int
	ForbidUnknown   bool
	Attempts        int
	Intents         int
	Global          int
	Backoff         *backoffTally // its fields exported for gob
	Redelivered     []wireRedelivered
	Undelivered     []wireUndelivered
}

// wireRedelivered and wireUndelivered are bounded-redelivery's messages
// waiting for the merge.
type wireRedelivered struct {
	Tenant, Key, Intent string
	Published, Op       int64
	Count               int
}

type wireUndelivered struct {
	Intent    string
	Published int64
}

type wireEndpoint struct {
	Method, Path string
	Status, N    int
	Headers      map[string]int
}

type wireStripped struct {
	Tenant, Method, Path, Key string
	Cands                     []wireCand
}

// wireCand is a marked replay waiting for the merge: only what
// strippedReplay reads of it (a shard of a busy trace holds millions).
// Method and Path are the scope's unless set; Headers index the result's
// header names (their values are never read).
type wireCand struct {
	Op           int64
	Intent       string
	Method, Path string
	Status       int
	Headers      []int
}

func wireOf(r Part) wireResult {
	w := wireResult{Name: r.Name, Verdict: r.Verdict, Reason: r.Reason, Checked: r.Checked}
	var ask map[violationID]twinQuery
	if len(r.twins) > 0 {
		ask = make(map[violationID]twinQuery, len(r.twins))
		for _, t := range r.twins {
			ask[t.v] = t.q
		}
	}
	for i := range r.Violations {
		v := &r.Violations[i]
		wv := wireViolation{V: *v}
		if q, ok := ask[idOf(v)]; ok {
			wv.Twin = &wireTwin{q.scope.Tenant, q.scope.Method, q.scope.Path, q.scope.Body, q.unit}
		}
		w.Violations = append(w.Violations, wv)
	}
	for _, p := range r.Results {
		w.Results = append(w.Results, wireOf(Part{Result: p}))
	}
	t := r.t
	w.T = wireTally{Early: t.early, NoCrash: t.noCrash, Unread: t.unread, Orphans: t.orphans, Unlearned: t.unlearned, Refuse: t.refuse,
		Undecidable: t.undecidable, Bound: t.bound, Budget: t.budget, Left: t.left, Keys: t.keys, LooseSeen: t.looseSeen,
		HasEndpoints: t.endpoints != nil, Client: t.client, Unattributed: t.unattributed, Unknowns: t.unknowns, Silent: t.silent,
		ForbidUnknown: t.forbidUnknown, Attempts: t.attempts, Intents: t.intents, Global: t.global, Backoff: t.backoff}
	for _, m := range t.redelivered {
		w.T.Redelivered = append(w.T.Redelivered, wireRedelivered{m.tenant, m.key, m.intent, m.published, m.op, m.count})
	}
	for _, m := range t.undelivered {
		w.T.Undelivered = append(w.T.Undelivered, wireUndelivered{m.intent, m.published})
	}
	for e, et := range t.endpoints {
		w.T.Endpoints = append(w.T.Endpoints, wireEndpoint{e.method, e.path, e.status, et.n, et.headers})
	}
	names := map[string]int{}
	for _, s := range t.stripped {
		ws := wireStripped{Tenant: s.s.tenant, Method: s.s.method, Path: s.s.path, Key: s.s.key}
		for _, a := range s.cands {
			c := wireCand{Op: a.Op, Intent: a.Intent, Status: a.Status}
			if a.Method != s.s.method || a.Path != s.s.path {
				c.Method, c.Path = a.Method, a.Path
			}
			for _, h := range a.RespHeaders {
				i, ok := names[h.Name]
				if !ok {
					i = len(w.T.HeaderNames)
					names[h.Name] = i
					w.T.HeaderNames = append(w.T.HeaderNames, h.Name)
				}
				c.Headers = append(c.Headers, i)
			}
			ws.Cands = append(ws.Cands, c)
		}
		w.T.Stripped = append(w.T.Stripped, ws)
	}
	return w
}

func (w wireResult) result() Part {
	r := Part{Result: Result{Name: w.Name, Verdict: w.Verdict, Reason: w.Reason, Checked: w.Checked}}
	for _, wv := range w.Violations {
		v := wv.V
		if q := wv.Twin; q != nil {
			r.twins = append(r.twins, twinAsk{idOf(&v), twinQuery{bodyScope{q.Tenant, q.Method, q.Path, q.Body}, q.Unit}})
		}
		r.Violations = append(r.Violations, v)
	}
	for _, p := range w.Results {
		r.Results = append(r.Results, p.result().Result)
	}
	t := w.T
	r.t = tally{early: t.Early, noCrash: t.NoCrash, unread: t.Unread, orphans: t.Orphans, unlearned: t.Unlearned, refuse: t.Refuse,
		undecidable: t.Undecidable, bound: t.Bound, budget: t.Budget, left: t.Left, keys: t.Keys, looseSeen: t.LooseSeen,
		client: t.Client, unattributed: t.Unattributed, unknowns: t.Unknowns, silent: t.Silent, forbidUnknown: t.ForbidUnknown,
		attempts: t.Attempts, intents: t.Intents, global: t.Global, backoff: t.Backoff}
	for _, m := range t.Redelivered {
		r.t.redelivered = append(r.t.redelivered, redelivered{m.Tenant, m.Key, m.Intent, m.Published, m.Op, m.Count})
	}
	for _, m := range t.Undelivered {
		r.t.undelivered = append(r.t.undelivered, undelivered{m.Intent, m.Published})
	}
	if t.HasEndpoints {
		r.t.endpoints = make(map[endpoint]*endpointTally, len(t.Endpoints))
	}
	for _, e := range t.Endpoints {
		h := e.Headers
		if h == nil {
			h = map[string]int{}
		}
		r.t.endpoints[endpoint{e.Method, e.Path, e.Status}] = &endpointTally{n: e.N, headers: h}
	}
	for _, s := range t.Stripped {
		c := strippedCandidates{s: scope{s.Tenant, s.Method, s.Path, s.Key}}
		as := make([]history.Attempt, len(s.Cands))
		for i, wc := range s.Cands {
			a := &as[i]
			a.Op, a.Intent, a.Method, a.Path, a.Status = wc.Op, wc.Intent, s.Method, s.Path, wc.Status
			if wc.Method != "" || wc.Path != "" {
				a.Method, a.Path = wc.Method, wc.Path
			}
			for _, h := range wc.Headers {
				if h >= 0 && h < len(t.HeaderNames) {
					a.RespHeaders = append(a.RespHeaders, history.Header{Name: t.HeaderNames[h]})
				}
			}
			c.cands = append(c.cands, a)
		}
		r.t.stripped = append(r.t.stripped, c)
	}
	return r
}

// Detach returns r holding nothing of the history it was checked on, for a
// part of a history checked alone ([WithGlobals]) whose result waits for
// the others: replay-identical keeps the marked replays it leaves to
// [Merge], and a pointer to one attempt pins the part's whole attempt
// slice (and the strings it points into). The copies keep only what the
// merge reads: op, intent, endpoint, status and the names of the headers
// the contract (from opts) compares.
func Detach(r Part, opts ...Option) Part {
	cfg := newConfig(opts)
	d := detacher{strs: map[string]string{}, keep: cfg.contract.keeps}
	return d.result(r)
}

type detacher struct {
	strs map[string]string
	keep func(name string) bool
}

// str interns s as a copy: the header names and endpoints repeat.
func (d *detacher) str(s string) string {
	if c, ok := d.strs[s]; ok {
		return c
	}
	c := strings.Clone(s)
	d.strs[c] = c
	return c
}

func (d *detacher) result(r Part) Part {
	if r.t.endpoints != nil {
		eps := make(map[endpoint]*endpointTally, len(r.t.endpoints))
		for e, t := range r.t.endpoints {
			hs := make(map[string]int, len(t.headers))
			for h, n := range t.headers {
				hs[d.str(h)] = n
			}
			eps[endpoint{d.str(e.method), d.str(e.path), e.status}] = &endpointTally{n: t.n, headers: hs}
		}
		r.t.endpoints = eps
	}
	if r.t.stripped != nil {
		var stripped []strippedCandidates
		for _, c := range r.t.stripped {
			var keep []*history.Attempt
			for _, a := range c.cands {
				if !safeReplay(a, r.t.endpoints) {
					keep = append(keep, a)
				}
			}
			if len(keep) == 0 {
				continue
			}
			s := scope{d.str(c.s.tenant), d.str(c.s.method), d.str(c.s.path), strings.Clone(c.s.key)}
			as := make([]history.Attempt, len(keep))
			cands := make([]*history.Attempt, len(keep))
			for j, a := range keep {
				b := &as[j]
				b.Op, b.Intent, b.Method, b.Path, b.Status = a.Op, strings.Clone(a.Intent), d.str(a.Method), d.str(a.Path), a.Status
				for _, h := range a.RespHeaders {
					if d.keep(h.Name) {
						b.RespHeaders = append(b.RespHeaders, history.Header{Name: d.str(h.Name)})
					}
				}
				cands[j] = b
			}
			stripped = append(stripped, strippedCandidates{s, cands})
		}
		r.t.stripped = stripped
	}
	return r
}

// safeReplay says whether a marked replay can never be judged stripped by
// the merge, whatever the other parts hold: it carries every header that
// all of this part's first-hand successes of its endpoint carried, and a
// header all successes of the whole history carried is among those. Most
// replays of a clean history are safe; a busy trace has millions of them,
// which would otherwise wait in memory for the merge. (One case differs
// from the whole-history check: a response that repeats a header counts it
// twice in the tallies, so "all successes carried it" can hold over the
// whole history while a success here lacked it; HTTP headers sent twice
// under one name are rare enough to take that.)
func safeReplay(a *history.Attempt, local map[endpoint]*endpointTally) bool {
	t := local[endpoint{a.Method, a.Path, a.Status}]
	if t == nil || t.n == 0 {
		return false // no success here to bound what the others require
	}
	for h, n := range t.headers {
		if n == t.n {
			if _, ok := a.RespHeaders.Get(h); !ok {
				return false
			}
		}
	}
	return true
}

// keeps says whether replay-identical may compare the named header on a
// replay: what [Contract.compared] can return, name by name.
func (c Contract) keeps(name string) bool {
	if c.ReplayHeaders == nil {
		return !c.ignored(name)
	}
	for _, h := range c.ReplayHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

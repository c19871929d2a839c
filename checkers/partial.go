package checkers

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// MarshalPartial encodes a result of a part of a history (checked with
// [WithGlobals]) with everything [Merge] needs of it: the counts behind its
// verdict and the questions its violations leave to the whole history. A
// machine that checked one partition sends it; the one that merges reads it
// back with [UnmarshalPartial]. Gob rather than JSON: explanations quote
// response bodies, whose bytes must come back exactly, valid UTF-8 or not.
func MarshalPartial(r Result) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(wireOf(r)); err != nil {
		return nil, fmt.Errorf("encode partial result %s: %w", r.Name, err)
	}
	return b.Bytes(), nil
}

// UnmarshalPartial decodes what [MarshalPartial] encoded.
func UnmarshalPartial(p []byte) (Result, error) {
	var w wireResult
	if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&w); err != nil {
		return Result{}, fmt.Errorf("decode partial result: %w", err)
	}
	return w.result(), nil
}

// The wire types mirror Result with its unexported state made exported,
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
	V       Violation // the exported fields; gob skips the rest
	IfLoose string
	Twin    *wireTwin
}

type wireTwin struct {
	Tenant, Method, Path string
	Body                 uint64
	Unit                 string
}

type wireTally struct {
	Settle          settleKind
	Early           string
	NoCrash, Unread bool
	Orphans         int
	Undecidable     int
	Bound, Budget   time.Duration
	Left, Keys      int
	LooseSeen       bool
	Endpoints       []wireEndpoint
	Stripped        []wireStripped
	HasEndpoints    bool // nil is how a result says it kept no tallies
}

type wireEndpoint struct {
	Method, Path string
	Status, N    int
	Headers      map[string]int
}

type wireStripped struct {
	Tenant, Method, Path, Key string
	Cands                     []history.Attempt
}

func wireOf(r Result) wireResult {
	w := wireResult{Name: r.Name, Verdict: r.Verdict, Reason: r.Reason, Checked: r.Checked}
	for _, v := range r.Violations {
		wv := wireViolation{V: v, IfLoose: v.ifLoose}
		if q := v.twin; q != nil {
			wv.Twin = &wireTwin{q.scope.tenant, q.scope.method, q.scope.path, q.scope.body, q.unit}
		}
		w.Violations = append(w.Violations, wv)
	}
	for _, p := range r.Results {
		w.Results = append(w.Results, wireOf(p))
	}
	t := r.t
	w.T = wireTally{Settle: t.settle, Early: t.early, NoCrash: t.noCrash, Unread: t.unread, Orphans: t.orphans,
		Undecidable: t.undecidable, Bound: t.bound, Budget: t.budget, Left: t.left, Keys: t.keys, LooseSeen: t.looseSeen,
		HasEndpoints: t.endpoints != nil}
	for e, et := range t.endpoints {
		w.T.Endpoints = append(w.T.Endpoints, wireEndpoint{e.method, e.path, e.status, et.n, et.headers})
	}
	for _, s := range t.stripped {
		ws := wireStripped{Tenant: s.s.tenant, Method: s.s.method, Path: s.s.path, Key: s.s.key}
		for _, a := range s.cands {
			ws.Cands = append(ws.Cands, *a)
		}
		w.T.Stripped = append(w.T.Stripped, ws)
	}
	return w
}

func (w wireResult) result() Result {
	r := Result{Name: w.Name, Verdict: w.Verdict, Reason: w.Reason, Checked: w.Checked}
	for _, wv := range w.Violations {
		v := wv.V
		v.ifLoose = wv.IfLoose
		if q := wv.Twin; q != nil {
			v.twin = &twinQuery{bodyScope{q.Tenant, q.Method, q.Path, q.Body}, q.Unit}
		}
		r.Violations = append(r.Violations, v)
	}
	for _, p := range w.Results {
		r.Results = append(r.Results, p.result())
	}
	t := w.T
	r.t = tally{settle: t.Settle, early: t.Early, noCrash: t.NoCrash, unread: t.Unread, orphans: t.Orphans,
		undecidable: t.Undecidable, bound: t.Bound, budget: t.Budget, left: t.Left, keys: t.Keys, looseSeen: t.LooseSeen}
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
		for i := range s.Cands {
			c.cands = append(c.cands, &s.Cands[i])
		}
		r.t.stripped = append(r.t.stripped, c)
	}
	return r
}

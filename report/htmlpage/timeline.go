package htmlpage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

// MaxTimelineAttempts caps the attempts drawn in one [Timeline]. A key that
// thousands of requests hit would draw an unreadable picture, and the page
// must stay small; the ops the violation lists are kept first, then the rest
// in the order they were sent, and [Timeline.Omitted] counts what was cut.
const MaxTimelineAttempts = 200

// MaxTimelinesPerRun caps the timelines computed for one run. Past a few
// dozen nobody reads them; the text report still lists every violation.
const MaxTimelinesPerRun = 50

// maxMarks caps the effects and faults drawn in one timeline, for the same
// reason as [MaxTimelineAttempts].
const maxMarks = 200

// Timeline is the data of one violating key's timeline: which attempts ran
// when and how they ended, which faults were active and which effects the
// system produced. It is plain data, computed by [Timelines] and drawn by
// [Write]; times are milliseconds from the start of the window.
//
// Lanes are one per simulated client ([history.Attempt.Client]), the way the
// driver runs them: a client's attempts follow one another, so its lane
// reads left to right as retry after retry. Attempts of one client that
// overlap in time (double clicks) are stacked on extra rows of its lane, so
// no bar hides another.
type Timeline struct {
	Run       int // index of the run in [Report.Runs]
	Step      int // index of the step in [Run.Steps]
	Invariant string
	// Violation is the index of the violation in its [Invariant.Violations].
	Violation int
	Tenant    string
	Method    string
	Path      string
	Key       string
	Intent    string
	// Ops are the ops the violation lists; their bars are highlighted.
	Ops         []int64
	Explanation string
	Cause       string

	// StartNS and EndNS bound the window in ns since run start: a little
	// before the first attempt drawn to a little after the last event.
	StartNS, EndNS int64
	// WidthMS is the window's length.
	WidthMS float64
	Lanes   []Lane
	// Rows counts the rows of all lanes together.
	Rows    int
	Faults  []FaultMark
	Effects []EffectMark
	// Omitted counts the attempts of the scope left out by
	// [MaxTimelineAttempts]; OmittedMarks the effects and faults left out.
	Omitted      int
	OmittedMarks int
	// Missing says why nothing could be drawn (no history for the run).
	Missing string
	// Signature is the violation's failure [Signature] ("" for a run that
	// keeps no history file). Repeat says it is drawn in an earlier run's
	// timeline of the same signature, not here.
	Signature string
	Repeat    bool
	// Trails are a client run's per-intent story (meta mode client), one
	// per intent drawn, in lane order: every attempt with its key, the gap
	// before it against the Retry-After asked for, who answered, and the
	// client's belief next to the truth. Nil in a server run, whose lanes
	// are clients, not intents.
	Trails []Trail
}

// Trail is one intent of a client run, as its timeline tells it: the
// attempts in the order they were sent and how the intent ended, in words
// as well as in the drawing, so that it reads without scripts and to a
// screen reader.
type Trail struct {
	Intent string
	Tenant string
	Steps  []TrailStep
	// Keys counts the distinct keys the intent's attempts sent ("" counts
	// as one: no key).
	Keys int
	// Belief is what the client's command said at its end (success,
	// unknown, failure), "" when its end was not recorded; Exit, Resource
	// and BeliefError are the belief event's.
	Belief      string
	Exit        int
	Resource    string
	BeliefError string
	// Truth is what the upstream did: "executed" (an effect attributed to
	// the intent), "not executed", or "" when the history does not record
	// effects; Effects are the effects' ids.
	Truth   string
	Effects []string
	// Verdict compares the two: "agrees", "contradicts" (a success with no
	// effect, a failure with one), "unknown" (the client said it cannot
	// know), or "" when either side is missing.
	Verdict string
}

// TrailStep is one attempt of a [Trail].
type TrailStep struct {
	Op     int64
	Number int
	Key    string
	// Rekeyed says the attempt sent another key than the intent's previous
	// one (a retry the upstream cannot tell from a new order); PrevKey is
	// that previous key.
	Rekeyed bool
	PrevKey string
	// GapMS is the wait since the previous attempt was answered, HasGap
	// false for the first attempt and after one that never completed.
	GapMS  float64
	HasGap bool
	// AskedMS is the delay the previous answer's Retry-After asked for (0:
	// none); Short says the gap fell short of it by more than
	// [checkers.RetryAfterTolerance].
	AskedMS int64
	Short   bool
	// WaitFromMS and WaitToMS are where the asked-for wait lies in the
	// window (from the previous answer), drawn when AskedMS is set.
	WaitFromMS, WaitToMS float64
	// Answer says how the attempt ended ("429", "no answer (reset)"); By
	// who gave it: "upstream", "proxy, forwarded" (the upstream had the
	// request; its answer was replaced or dropped), "proxy, not forwarded",
	// or "" for an attempt that never completed.
	Answer string
	By     string
	// Class is the attempt's legend class, as its bar's.
	Class string
	// Row and StartMS place the attempt's bar, for the drawn key break.
	Row     int
	StartMS float64
}

// Lane is the attempts of one client.
type Lane struct {
	Client int
	// Intent is the lane's intent in a client run, whose lanes are
	// intents (its attempts all come from the one client under test).
	Intent string
	Label  string
	Row    int // the lane's first row in the timeline
	Rows   int // how many rows its bars need
	Bars   []Bar
}

// Bar is one attempt, from its invoke to its completion (or to the end of
// the history when it never completed).
type Bar struct {
	Op     int64
	Intent string
	Tenant string
	Key    string
	Method string
	Path   string
	Number int // attempt number within the intent
	Client int
	Row    int // row in the timeline

	StartMS, EndMS float64
	// Open says no completion was recorded: the bar runs to the end of the
	// history and the attempt counts as info.
	Open    bool
	Outcome string // ok, info, fail
	Status  int
	Error   string
	Preview string // start of the response body, untrusted
	// Listed says the violation names this op.
	Listed bool
	// Class is the legend entry: s2xx, s3xx, s4xx, s5xx (ok with that
	// status), info or fail.
	Class string
	// Tip is the tooltip text: every field above in words.
	Tip string
}

// FaultMark is a fault in a timeline. A fault aimed at one attempt is a mark
// at the moment it fired, on that attempt's row; a fault on a shared link or
// a process (op 0) is a region from fire to heal, or to the end of the
// history when it never healed.
type FaultMark struct {
	Kind string
	Op   int64 // the attempt it hit, 0 for a region
	// Row is the row of the attempt it hit, -1 for a region.
	Row            int
	StartMS, EndMS float64 // equal for an aimed fault
	Region         bool
	Healed         bool // a region that ended with a heal event
	Detail         string
	Tip            string
}

// EffectMark is an effect the system produced for the scope. Oracles read
// effects at the end of a step, so a mark says "seen by then", not "made
// then".
type EffectMark struct {
	AtMS   float64
	Tenant string
	Key    string
	Intent string
	Kind   string
	ID     string
	Tip    string
}

// Timelines computes one [Timeline] per violation of every run, in report
// order, at most [MaxTimelinesPerRun] per run. histories maps each run's
// [HistoryKey] (its [Run.History] path) to the loaded history; a run without
// one still gets its timelines, with [Timeline.Missing] set and nothing
// drawn.
//
// A seed sweep against one bug fails the same way in hundreds of runs, and
// hundreds of near-identical drawings help no reader (and cost a history
// load each). So among the runs that keep their history in a file, each
// failure [Signature] is drawn in one run only: the first, in report order,
// whose history is in histories (or the first at all, when none is). Its
// violations in every other run are a [Timeline.Repeat]: listed with their
// explanation and history file, not drawn, and their histories are not
// needed ([TimelineRuns] says which are). A run that keeps no history file
// is always drawn: there is no file to send the reader to.
//
// A timeline draws every attempt of the violation's (tenant, key) scope, the
// attempts of the same intents under other keys (a client that makes a new
// key per retry), and the ops the violation lists, wherever they are.
// Building the indexes is linear in the history and each timeline is linear
// in what it draws.
func Timelines(rep report.Report, histories map[string]*history.History) []Timeline {
	slots := timelineSlots(rep)
	owner := drawers(slots, func(i int) bool { return histories[HistoryKey(rep.Runs[i], i)] != nil })
	out := make([]Timeline, 0, len(slots))
	indexes := map[*history.History]*histIndex{}
	for _, sl := range slots {
		run, v := rep.Runs[sl.run], sl.v
		t := Timeline{Run: sl.run, Step: sl.step, Invariant: sl.invariant, Violation: sl.index, Tenant: v.Tenant, Method: v.Method, Path: v.Path,
			Key: v.Key, Intent: v.Intent, Ops: v.Ops, Explanation: v.Explanation, Cause: v.Cause, Signature: sl.sig}
		t.Repeat = sl.sig != "" && owner[sl.sig] != sl.run
		h := histories[HistoryKey(run, sl.run)]
		switch {
		case t.Repeat:
		case h == nil:
			t.Missing = "no history loaded for this run"
			if run.History != "" {
				t.Missing = "history " + run.History + " was not loaded"
			}
		default:
			x := indexes[h]
			if x == nil {
				x = newHistIndex(h)
				indexes[h] = x
			}
			x.fill(&t, v)
		}
		out = append(out, t)
	}
	return out
}

// TimelineRuns returns the runs, by index in report order, whose history
// files [Timelines] draws from when the runs in lost have no history (their
// file could not be read): per failure [Signature], the first run with
// that signature that is not lost. A caller loads just these, and asks
// again with the failed ones added to lost.
func TimelineRuns(rep report.Report, lost map[int]bool) []int {
	slots := timelineSlots(rep)
	owner := drawers(slots, func(i int) bool { return !lost[i] })
	seen := map[int]bool{}
	var out []int
	for _, sl := range slots {
		if sl.sig != "" && !seen[sl.run] && !lost[sl.run] && owner[sl.sig] == sl.run {
			seen[sl.run] = true
			out = append(out, sl.run)
		}
	}
	return out
}

// slot is a violation that gets a timeline, and its signature ("" in a
// run without a history file).
type slot struct {
	run, step, index int
	invariant        string
	v                report.Violation
	sig              string
}

// timelineSlots lists the violations that get a timeline: every one of
// every run, in report order, up to [MaxTimelinesPerRun] per run.
func timelineSlots(rep report.Report) []slot {
	var out []slot
	for ri, run := range rep.Runs {
		n := 0
		for si, st := range run.Steps {
			for _, iv := range st.Invariants {
				for vi, v := range iv.Violations {
					if n == MaxTimelinesPerRun {
						break
					}
					n++
					sl := slot{run: ri, step: si, index: vi, invariant: iv.Name, v: v}
					if run.History != "" {
						sl.sig = Signature(run, si, iv.Name, v)
					}
					out = append(out, sl)
				}
			}
		}
	}
	return out
}

// drawers maps each failure signature of the runs with a history file to
// the run that draws it: the first one that has its history (has), else
// the first one.
func drawers(slots []slot, has func(run int) bool) map[string]int {
	owner := map[string]int{}
	loaded := map[string]bool{}
	for _, sl := range slots {
		if sl.sig == "" {
			continue
		}
		if _, ok := owner[sl.sig]; !ok || (!loaded[sl.sig] && has(sl.run)) {
			owner[sl.sig] = sl.run
			loaded[sl.sig] = has(sl.run)
		}
	}
	return owner
}

// HistoryKey is the key of the i-th run of a report in the histories given
// to [Timelines]: its [Run.History] path, or "#i" when the run kept its
// history in memory only, so that two such runs never share one.
func HistoryKey(run report.Run, i int) string {
	if run.History != "" {
		return run.History
	}
	return fmt.Sprintf("#%d", i)
}

// histIndex finds the attempts, effects and faults of a violation without
// scanning the history once per violation: the attempts and effects of a
// scope or an intent through the checkers' own index of the history (so a
// timeline draws the attempts its checker grouped), the faults and beliefs
// a drawing alone needs here.
type histIndex struct {
	h       *history.History
	ix      *checkers.Index
	aimed   map[int64][]int           // op → indexes into h.Faults
	beliefs map[string]history.Belief // a client run's, by intent: the first
	regions []region                  // faults on op 0, paired fire → heal
}

type region struct {
	fault      int // index of the fire event in h.Faults
	start, end int64
	healed     bool
}

func newHistIndex(h *history.History) *histIndex {
	x := &histIndex{h: h, ix: checkers.NewIndex(h), aimed: map[int64][]int{}}
	for _, b := range h.Beliefs {
		if _, ok := x.beliefs[b.Intent]; !ok {
			if x.beliefs == nil {
				x.beliefs = map[string]history.Belief{}
			}
			x.beliefs[b.Intent] = b
		}
	}
	// A heal closes the oldest open region of its kind: shared faults of one
	// kind heal in the order they fired.
	open := map[string][]int{}
	for i, f := range h.Faults {
		switch {
		case f.Op != 0:
			x.aimed[f.Op] = append(x.aimed[f.Op], i)
		case f.Action == "heal":
			if q := open[f.Kind]; len(q) > 0 {
				r := &x.regions[q[0]]
				r.end, r.healed = f.NS, true
				open[f.Kind] = q[1:]
			}
		default:
			open[f.Kind] = append(open[f.Kind], len(x.regions))
			x.regions = append(x.regions, region{fault: i, start: f.NS, end: h.End})
		}
	}
	return x
}

// fill computes the drawing of violation v into t.
func (x *histIndex) fill(t *Timeline, v report.Violation) {
	h := x.h
	picked := x.pick(t, v)
	if len(picked) == 0 {
		t.Missing = "none of the violation's attempts is in the history"
		return
	}
	slices.SortFunc(picked, func(a, b int) int {
		return cmp.Or(cmp.Compare(h.Attempts[a].Invoke, h.Attempts[b].Invoke), cmp.Compare(h.Attempts[a].Op, h.Attempts[b].Op))
	})

	// The effects of every scope drawn, and of every intent drawn when the
	// producer recorded intents.
	seenEff := map[int]bool{}
	var effects []int
	addEff := func(is []int32) {
		for _, i := range is {
			if !seenEff[int(i)] {
				seenEff[int(i)] = true
				effects = append(effects, int(i))
			}
		}
	}
	type tenantKey struct{ tenant, key string }
	keys := map[tenantKey]bool{}
	intents := map[string]bool{}
	for _, i := range picked {
		a := &h.Attempts[i]
		if tk := (tenantKey{a.Tenant, a.Key}); !keys[tk] {
			keys[tk] = true
			// Keyless effects only identify a scope when there are no
			// intents to tell them apart.
			if a.Key != "" || !h.IntentsKnown {
				addEff(x.ix.KeyEffects(a.Tenant, a.Key))
			}
		}
		if h.IntentsKnown && !intents[a.Intent] {
			intents[a.Intent] = true
			addEff(x.ix.IntentEffects(a.Intent))
		}
	}
	slices.Sort(effects)
	if len(effects) > maxMarks {
		t.OmittedMarks += len(effects) - maxMarks
		effects = effects[:maxMarks]
	}

	// The window: from the first invoke to the last thing drawn.
	start, end := int64(math.MaxInt64), int64(math.MinInt64)
	for _, i := range picked {
		a := &h.Attempts[i]
		start = min(start, a.Invoke)
		end = max(end, a.End(h.End))
		for _, f := range x.aimed[a.Op] {
			end = max(end, h.Faults[f].NS)
		}
	}
	for _, i := range effects {
		end = max(end, h.Effects[i].NS)
	}
	pad := max((end-start)/25, int64(time.Millisecond))
	t.StartNS, t.EndNS = max(start-pad, 0), end+pad
	t.WidthMS = nsToMS(t.EndNS - t.StartNS)
	rel := func(ns int64) float64 { return nsToMS(min(max(ns, t.StartNS), t.EndNS) - t.StartNS) }

	// Lanes by client, rows packed greedily within a lane.
	listed := map[int64]bool{}
	for _, op := range v.Ops {
		listed[op] = true
	}
	// A server run's lanes are its clients; a client run's, its intents:
	// there the one client under test sent everything, and the story is
	// each intent's retries.
	client := h.Client()
	type laneID struct {
		client int
		intent string
	}
	byLane := map[laneID][]int{}
	var lanes []laneID
	for _, i := range picked {
		id := laneID{client: h.Attempts[i].Client}
		if client {
			id = laneID{intent: h.Attempts[i].Intent}
		}
		if _, ok := byLane[id]; !ok {
			lanes = append(lanes, id)
		}
		byLane[id] = append(byLane[id], i)
	}
	if !client {
		slices.SortFunc(lanes, func(a, b laneID) int { return cmp.Compare(a.client, b.client) })
	}
	rowOf := map[int64]int{}
	for _, id := range lanes {
		c := id.client
		lane := Lane{Client: c, Label: fmt.Sprintf("client %d", c), Row: t.Rows}
		if client {
			lane.Client, lane.Intent, lane.Label = h.Attempts[byLane[id][0]].Client, id.intent, "intent "+clip(id.intent, 8)
		}
		var rowEnds []int64
		for _, i := range byLane[id] {
			a := &h.Attempts[i]
			row := slices.IndexFunc(rowEnds, func(e int64) bool { return e < a.Invoke })
			if row < 0 {
				row = len(rowEnds)
				rowEnds = append(rowEnds, 0)
			}
			rowEnds[row] = a.End(h.End)
			b := bar(a, h.End, rel)
			b.Row = lane.Row + row
			b.Listed = listed[a.Op]
			rowOf[a.Op] = b.Row
			lane.Bars = append(lane.Bars, b)
		}
		lane.Rows = len(rowEnds)
		t.Rows += lane.Rows
		t.Lanes = append(t.Lanes, lane)
		if client {
			t.Trails = append(t.Trails, x.trail(id.intent, byLane[id], lane.Bars, rel))
		}
	}

	// Faults: marks on the rows of the attempts they hit, regions that
	// overlap the window.
	for _, i := range picked {
		for _, f := range x.aimed[h.Attempts[i].Op] {
			fa := h.Faults[f]
			if fa.Action == "heal" {
				continue
			}
			at := rel(fa.NS)
			m := FaultMark{Kind: fa.Kind, Op: fa.Op, Row: rowOf[fa.Op], StartMS: at, EndMS: at, Detail: string(fa.Detail)}
			m.Tip = fmt.Sprintf("fault %s on op %d at %s ms", fa.Kind, fa.Op, fmtMS(at))
			t.Faults = append(t.Faults, m)
		}
	}
	for _, r := range x.regions {
		if r.end < t.StartNS || r.start > t.EndNS {
			continue
		}
		fa := h.Faults[r.fault]
		m := FaultMark{Kind: fa.Kind, Row: -1, StartMS: rel(r.start), EndMS: rel(r.end), Region: true, Healed: r.healed, Detail: string(fa.Detail)}
		m.Tip = fmt.Sprintf("fault %s from %s ms", fa.Kind, fmtMS(nsToMS(r.start-t.StartNS)))
		if r.healed {
			m.Tip += fmt.Sprintf(" to %s ms (healed)", fmtMS(nsToMS(r.end-t.StartNS)))
		} else {
			m.Tip += ", never healed"
		}
		t.Faults = append(t.Faults, m)
	}
	for i := range t.Faults {
		if d := t.Faults[i].Detail; d != "" && d != "null" {
			t.Faults[i].Tip += "\n" + d
		}
	}
	if len(t.Faults) > maxMarks {
		t.OmittedMarks += len(t.Faults) - maxMarks
		t.Faults = t.Faults[:maxMarks]
	}

	for _, i := range effects {
		e := h.Effects[i]
		m := EffectMark{AtMS: rel(e.NS), Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Kind: e.Kind, ID: e.ID}
		m.Tip = fmt.Sprintf("effect %s at %s ms (read by the oracle by then)\ntenant %s · key %s", e.ID, fmtMS(m.AtMS), e.Tenant, report.OrNone(e.Key))
		if e.Intent != "" {
			m.Tip += " · intent " + e.Intent
		}
		t.Effects = append(t.Effects, m)
	}
}

// pick returns the attempts to draw, by index: the listed ops, then the
// violation's intent, then its (tenant, key) scope, then the other attempts
// of every intent met so far, up to [MaxTimelineAttempts]; t.Omitted counts
// the rest.
func (x *histIndex) pick(t *Timeline, v report.Violation) []int {
	h := x.h
	seen := map[int]bool{}
	var out []int
	add := func(i int) {
		if seen[i] {
			return
		}
		seen[i] = true
		if len(out) == MaxTimelineAttempts {
			t.Omitted++
			return
		}
		out = append(out, i)
	}
	for _, op := range v.Ops {
		if i, ok := x.ix.AttemptOf(op); ok {
			add(i)
		}
	}
	if v.Intent != "" && h.IntentsKnown {
		for _, i := range x.ix.IntentAttempts(v.Intent) {
			add(int(i))
		}
	}
	// A keyless request has no scope: all a tenant's keyless requests
	// would be noise. Its intent (above) stands in for it.
	if v.Key != "" || !h.IntentsKnown {
		for _, i := range x.ix.KeyAttempts(v.Tenant, v.Key) {
			add(int(i))
		}
	}
	if h.IntentsKnown {
		done := map[string]bool{v.Intent: true}
		for n := 0; n < len(out); n++ {
			in := h.Attempts[out[n]].Intent
			if done[in] {
				continue
			}
			done[in] = true
			for _, i := range x.ix.IntentAttempts(in) {
				add(int(i))
			}
		}
	}
	return out
}

func bar(a *history.Attempt, end int64, rel func(int64) float64) Bar {
	b := Bar{Op: a.Op, Intent: a.Intent, Tenant: a.Tenant, Key: a.Key, Method: a.Method, Path: a.Path, Number: a.Number,
		Client: a.Client, StartMS: rel(a.Invoke), EndMS: rel(a.End(end)), Open: !a.Done(), Outcome: a.Outcome.String(),
		Error: a.Error, Preview: a.RespPreview}
	b.Class = b.Outcome
	if a.HasResp {
		b.Status = a.Status
		b.Class = fmt.Sprintf("s%dxx", min(max(a.Status/100, 1), 5))
	}
	var tip strings.Builder
	fmt.Fprintf(&tip, "op %d · attempt %d · client %d\n", a.Op, a.Number, a.Client)
	fmt.Fprintf(&tip, "intent %s · tenant %s · key %s\n", a.Intent, a.Tenant, report.OrNone(a.Key))
	if a.Method != "" || a.Path != "" {
		fmt.Fprintf(&tip, "%s %s\n", a.Method, a.Path)
	}
	fmt.Fprintf(&tip, "%s → ", fmtMS(b.StartMS))
	switch {
	case b.Open:
		tip.WriteString("end of history: no completion recorded (info)")
	case a.HasResp:
		fmt.Fprintf(&tip, "%s ms: %s, status %d", fmtMS(b.EndMS), b.Outcome, a.Status)
	default:
		fmt.Fprintf(&tip, "%s ms: %s", fmtMS(b.EndMS), b.Outcome)
	}
	if a.Error != "" {
		tip.WriteString(" (" + a.Error + ")")
	}
	if a.Proxied {
		tip.WriteString("\nanswered by the fault proxy, ")
		if a.Forwarded {
			tip.WriteString("after the upstream had the request")
		} else {
			tip.WriteString("not forwarded to the upstream")
		}
	}
	if a.HasResp {
		fmt.Fprintf(&tip, "\nbody (%d bytes): %s", a.RespLen, a.RespPreview)
	}
	b.Tip = tip.String()
	return b
}

// nsToMS converts to milliseconds rounded to the microsecond, so that the
// data compares exactly in tests and prints short.
func nsToMS(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

func fmtMS(ms float64) string { return fmt.Sprintf("%.1f", ms) }

// trail tells intent's story from its attempts (indexes into the history,
// in the order sent) and their bars.
func (x *histIndex) trail(intent string, attempts []int, bars []Bar, rel func(int64) float64) Trail {
	h := x.h
	tr := Trail{Intent: intent}
	keys := map[string]bool{}
	for j, i := range attempts {
		a := &h.Attempts[i]
		if tr.Tenant == "" {
			tr.Tenant = a.Tenant
		}
		keys[a.Key] = true
		st := TrailStep{Op: a.Op, Number: a.Number, Key: a.Key, Answer: answer(a), Class: bars[j].Class, Row: bars[j].Row, StartMS: bars[j].StartMS}
		if a.Done() {
			st.By = "upstream"
			if a.Proxied {
				st.By = "proxy, not forwarded"
				if a.Forwarded {
					st.By = "proxy, forwarded"
				}
			}
		}
		if j > 0 {
			prev := &h.Attempts[attempts[j-1]]
			st.Rekeyed, st.PrevKey = a.Key != prev.Key, prev.Key
			if prev.Done() {
				st.HasGap, st.GapMS = true, nsToMS(a.Invoke-prev.Complete)
				if prev.RetryAfterMS > 0 {
					st.AskedMS = prev.RetryAfterMS
					asked := time.Duration(prev.RetryAfterMS) * time.Millisecond
					st.Short = time.Duration(a.Invoke-prev.Complete) < asked-checkers.RetryAfterTolerance
					st.WaitFromMS, st.WaitToMS = rel(prev.Complete), rel(prev.Complete+asked.Nanoseconds())
				}
			}
		}
		tr.Steps = append(tr.Steps, st)
	}
	tr.Keys = len(keys)
	if b, ok := x.beliefs[intent]; ok {
		tr.Belief, tr.Exit, tr.Resource, tr.BeliefError = b.Belief, b.Exit, b.Resource, b.Error
	}
	if h.EffectsKnown && !h.Meta.EffectsUnread {
		tr.Truth = "not executed"
		for _, e := range x.ix.IntentEffects(intent) {
			tr.Effects = append(tr.Effects, h.Effects[e].ID)
		}
		if len(tr.Effects) > 0 {
			tr.Truth = "executed"
		}
	}
	switch {
	case tr.Belief == history.BeliefUnknown:
		tr.Verdict = "unknown"
	case tr.Belief == "" || tr.Truth == "":
	case (tr.Belief == history.BeliefSuccess) == (tr.Truth == "executed"):
		tr.Verdict = "agrees"
	default:
		tr.Verdict = "contradicts"
	}
	return tr
}

// answer says how an attempt ended, in words: its status, or why none came.
func answer(a *history.Attempt) string {
	switch {
	case !a.Done():
		return "open (no completion recorded)"
	case a.HasResp:
		return fmt.Sprint(a.Status)
	case a.Outcome == history.Fail:
		return "no connection" + inParens(a.Error)
	}
	return "no answer" + inParens(a.Error)
}

func inParens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

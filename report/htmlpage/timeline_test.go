package htmlpage_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// fixture is a small history around key k-9 of tenant t1 (times in ms):
//
//	client 1: op1 i1#1 k-9        100 → 510 info (response dropped at 101)
//	          op8 i1#2 k-9-retry  520 → 521 fail
//	          op2 i1#3 k-9        600 → 610 ok 201
//	          op4 i1#4 k-9-retry  700 → never completes
//	client 2: op3 i2#1 k-9        605 → 606 ok 409
//	          op7 i2#1 k-9      605.5 → 800 ok 502 (double click; gateway-5xx at 790)
//	client 3: op5 i3 k-other, op6 i4 on tenant t2: not part of k-9's story
//
// plus a latency region 50 → 300, a crash 850 → 900, and effects at 920 on
// k-9, k-9-retry (drawn) and k-other, t2/k-9 (not drawn).
const fixture = `{"type":"meta","v":1,"scenario":"fixture","seed":7,"effects_recorded":true}
{"type":"fault","fault":"latency","ns":50000000,"detail":{"latency_ms":20}}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k-9","attempt":1,"client":1,"ns":100000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"fault","fault":"response-drop","op":1,"ns":101000000,"detail":{"path":"downstream"}}
{"type":"fault","fault":"latency","action":"heal","ns":300000000}
{"type":"info","op":1,"ns":510000000,"error":"timeout after 400ms"}
{"type":"invoke","op":8,"intent":"i1","tenant":"t1","key":"k-9-retry","attempt":2,"client":1,"ns":520000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"fail","op":8,"ns":521000000,"error":"connection refused"}
{"type":"invoke","op":2,"intent":"i1","tenant":"t1","key":"k-9","attempt":3,"client":1,"ns":600000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"invoke","op":3,"intent":"i2","tenant":"t1","key":"k-9","attempt":1,"client":2,"ns":605000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"invoke","op":7,"intent":"i2","tenant":"t1","key":"k-9","attempt":1,"client":2,"ns":605500000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"ok","op":3,"ns":606000000,"resp":{"status":409,"body":"{\"error\":\"in flight\"}"}}
{"type":"ok","op":2,"ns":610000000,"resp":{"status":201,"body":"{\"id\":\"o-1\"}"}}
{"type":"invoke","op":5,"intent":"i3","tenant":"t1","key":"k-other","attempt":1,"client":3,"ns":620000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"invoke","op":6,"intent":"i4","tenant":"t2","key":"k-9","attempt":1,"client":3,"ns":630000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"ok","op":5,"ns":640000000,"resp":{"status":201,"body":"{}"}}
{"type":"ok","op":6,"ns":650000000,"resp":{"status":201,"body":"{}"}}
{"type":"invoke","op":4,"intent":"i1","tenant":"t1","key":"k-9-retry","attempt":4,"client":1,"ns":700000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}
{"type":"fault","fault":"gateway-5xx","op":7,"ns":790000000,"detail":{"status":502}}
{"type":"ok","op":7,"ns":800000000,"resp":{"status":502,"body":"bad gateway"}}
{"type":"fault","fault":"crash","ns":850000000,"detail":{"process":"service"}}
{"type":"fault","fault":"crash","action":"heal","ns":900000000}
{"type":"effect","tenant":"t1","key":"k-9","effect":"order o-1","ns":920000000}
{"type":"effect","tenant":"t1","key":"k-9-retry","effect":"order o-2","ns":920000000}
{"type":"effect","tenant":"t1","key":"k-other","effect":"order o-3","ns":920000000}
{"type":"effect","tenant":"t2","key":"k-9","effect":"order o-4","ns":920000000}
`

func loadHistory(tb testing.TB, jsonl string) *history.History {
	tb.Helper()
	h, err := history.Load(strings.NewReader(jsonl), history.LoadOptions{})
	if err != nil {
		tb.Fatalf("load history: %v", err)
	}
	return h
}

// violatingReport is a report with one run whose only violation is v.
func violatingReport(path string, v report.Violation) report.Report {
	return report.New([]report.Run{{Scenario: "fixture", Seed: 7, History: path, Verdict: "violation",
		Replay: "idemchaos run -s fixture.yaml --seed 7", Steps: []report.Step{{Expect: "clean", Verdict: "violation",
			Invariants: []report.Invariant{
				{Name: "exactly-once", Verdict: "violation", Checked: 3, Violations: []report.Violation{v}},
				{Name: "replay-identical", Verdict: "pass", Checked: 3, Violations: []report.Violation{}},
			}}}}})
}

func fixtureTimeline(t *testing.T) htmlpage.Timeline {
	t.Helper()
	v := report.Violation{Tenant: "t1", Method: "POST", Path: "/v1/orders", Key: "k-9", Intent: "i1", Ops: []int64{1, 2},
		Explanation: "intent i1 produced 2 order effects", Cause: "execute-then-record"}
	tls := htmlpage.Timelines(violatingReport("h.jsonl", v), map[string]*history.History{"h.jsonl": loadHistory(t, fixture)})
	if len(tls) != 1 {
		t.Fatalf("got %d timelines, want 1", len(tls))
	}
	return tls[0]
}

// barShape is what the test pins of a bar: where it is and how it ended.
type barShape struct {
	Op             int64
	Row            int
	StartMS, EndMS float64
	Class          string
	Status         int
	Open, Listed   bool
}

func TestTimelines_WindowAndLanes(t *testing.T) {
	t.Parallel()
	tl := fixtureTimeline(t)
	// The window runs from the first invoke (100) to the last event drawn
	// (the open attempt and the effects, 920), padded by 1/25 of the span
	// (32.8 ms) on each side.
	if tl.StartNS != 67_200_000 || tl.EndNS != 952_800_000 || tl.WidthMS != 885.6 {
		t.Errorf("window = %d..%d (%v ms), want 67200000..952800000 (885.6 ms)", tl.StartNS, tl.EndNS, tl.WidthMS)
	}
	if tl.Invariant != "exactly-once" || tl.Key != "k-9" || tl.Tenant != "t1" || tl.Intent != "i1" || tl.Cause != "execute-then-record" || tl.Run != 0 || tl.Step != 0 {
		t.Errorf("header fields: %+v", tl)
	}
	if tl.Rows != 3 || len(tl.Lanes) != 2 || tl.Omitted != 0 || tl.Missing != "" {
		t.Fatalf("rows %d, lanes %d, omitted %d, missing %q; want 3, 2, 0, \"\"", tl.Rows, len(tl.Lanes), tl.Omitted, tl.Missing)
	}
	want := map[string][]barShape{
		// Client 1 retried one after another: one row. op8 and op4 carry
		// another key but the same intent, so they belong to the story.
		"client 1": {
			{Op: 1, Row: 0, StartMS: 32.8, EndMS: 442.8, Class: "info", Listed: true},
			{Op: 8, Row: 0, StartMS: 452.8, EndMS: 453.8, Class: "fail"},
			{Op: 2, Row: 0, StartMS: 532.8, EndMS: 542.8, Class: "s2xx", Status: 201, Listed: true},
			{Op: 4, Row: 0, StartMS: 632.8, EndMS: 852.8, Class: "info", Open: true},
		},
		// Client 2 double-clicked: op7 overlaps op3, so it gets a row of its own.
		"client 2": {
			{Op: 3, Row: 1, StartMS: 537.8, EndMS: 538.8, Class: "s4xx", Status: 409},
			{Op: 7, Row: 2, StartMS: 538.3, EndMS: 732.8, Class: "s5xx", Status: 502},
		},
	}
	for i, lane := range tl.Lanes {
		wantRow, wantRows := []int{0, 1}[i], []int{1, 2}[i]
		if lane.Row != wantRow || lane.Rows != wantRows {
			t.Errorf("%s: row %d rows %d, want %d %d", lane.Label, lane.Row, lane.Rows, wantRow, wantRows)
		}
		var got []barShape
		for _, b := range lane.Bars {
			got = append(got, barShape{b.Op, b.Row, b.StartMS, b.EndMS, b.Class, b.Status, b.Open, b.Listed})
		}
		if !reflect.DeepEqual(got, want[lane.Label]) {
			t.Errorf("%s bars:\n got %+v\nwant %+v", lane.Label, got, want[lane.Label])
		}
	}
}

func TestTimelines_BarDetails(t *testing.T) {
	t.Parallel()
	tl := fixtureTimeline(t)
	b := tl.Lanes[0].Bars[2] // op2
	if b.Outcome != "ok" || b.Preview != `{"id":"o-1"}` || b.Number != 3 || b.Intent != "i1" || b.Method != "POST" {
		t.Errorf("op2 bar: %+v", b)
	}
	for _, s := range []string{"op 2 · attempt 3 · client 1", "key k-9", "532.8 → 542.8 ms: ok, status 201", `body (12 bytes): {"id":"o-1"}`} {
		if !strings.Contains(b.Tip, s) {
			t.Errorf("op2 tip %q lacks %q", b.Tip, s)
		}
	}
	open := tl.Lanes[0].Bars[3]
	if open.Outcome != "info" || !strings.Contains(open.Tip, "no completion recorded") {
		t.Errorf("open bar: %+v", open)
	}
	if f := tl.Lanes[0].Bars[0]; f.Error != "timeout after 400ms" || !strings.Contains(f.Tip, "info (timeout after 400ms)") {
		t.Errorf("op1 bar: %+v", f)
	}
}

func TestTimelines_FaultsAndEffects(t *testing.T) {
	t.Parallel()
	tl := fixtureTimeline(t)
	type faultShape struct {
		Kind           string
		Op             int64
		Row            int
		StartMS, EndMS float64
		Region, Healed bool
	}
	var got []faultShape
	for _, f := range tl.Faults {
		got = append(got, faultShape{f.Kind, f.Op, f.Row, f.StartMS, f.EndMS, f.Region, f.Healed})
	}
	want := []faultShape{
		{Kind: "response-drop", Op: 1, Row: 0, StartMS: 33.8, EndMS: 33.8},
		{Kind: "gateway-5xx", Op: 7, Row: 2, StartMS: 722.8, EndMS: 722.8},
		// The latency region began before the window: clipped to its start.
		{Kind: "latency", Row: -1, StartMS: 0, EndMS: 232.8, Region: true, Healed: true},
		{Kind: "crash", Row: -1, StartMS: 782.8, EndMS: 832.8, Region: true, Healed: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("faults:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(tl.Faults[0].Tip, `{"path":"downstream"}`) {
		t.Errorf("fault tip lacks its detail: %q", tl.Faults[0].Tip)
	}
	var effects []string
	for _, e := range tl.Effects {
		effects = append(effects, fmt.Sprintf("%s@%v %s/%s", e.ID, e.AtMS, e.Tenant, e.Key))
	}
	if w := []string{"order o-1@852.8 t1/k-9", "order o-2@852.8 t1/k-9-retry"}; !reflect.DeepEqual(effects, w) {
		t.Errorf("effects = %v, want %v (not k-other's, not tenant t2's)", effects, w)
	}
}

func TestTimelines_OpenFaultRunsToEndOfHistory(t *testing.T) {
	t.Parallel()
	h := loadHistory(t, `{"type":"meta","v":1}
{"type":"invoke","op":1,"tenant":"t","key":"k","ns":10000000}
{"type":"fault","fault":"replica-lag","ns":15000000}
{"type":"ok","op":1,"ns":20000000,"resp":{"status":200,"body":""}}
{"type":"invoke","op":2,"tenant":"t","key":"other","ns":90000000}
`)
	tls := htmlpage.Timelines(violatingReport("h", report.Violation{Tenant: "t", Key: "k", Ops: []int64{1}}), map[string]*history.History{"h": h})
	tl := tls[0]
	// Without intents the key is the intent; the window pads by 1 ms at least.
	if tl.StartNS != 9_000_000 || tl.EndNS != 21_000_000 || len(tl.Lanes) != 1 || len(tl.Lanes[0].Bars) != 1 {
		t.Fatalf("timeline: %+v", tl)
	}
	f := tl.Faults
	if len(f) != 1 || !f[0].Region || f[0].Healed || f[0].StartMS != 6 || f[0].EndMS != 12 || !strings.Contains(f[0].Tip, "never healed") {
		t.Errorf("an unhealed region must run to the end of the window: %+v", f)
	}
}

func TestTimelines_CapKeepsListedOps(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"type":"meta","v":1}` + "\n")
	n := htmlpage.MaxTimelineAttempts + 50
	for op := 1; op <= n; op++ {
		fmt.Fprintf(&b, `{"type":"invoke","op":%d,"intent":"i%d","tenant":"t","key":"hot","client":%d,"ns":%d}`+"\n", op, op, op%4, op*1000)
		fmt.Fprintf(&b, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":200,"body":""}}`+"\n", op, op*1000+500)
	}
	last := int64(n)
	tls := htmlpage.Timelines(violatingReport("h", report.Violation{Tenant: "t", Key: "hot", Ops: []int64{last}}), map[string]*history.History{"h": loadHistory(t, b.String())})
	tl := tls[0]
	drawn := 0
	listed := false
	for _, l := range tl.Lanes {
		drawn += len(l.Bars)
		for _, b := range l.Bars {
			listed = listed || (b.Op == last && b.Listed)
		}
	}
	if drawn != htmlpage.MaxTimelineAttempts || tl.Omitted != 50 || !listed {
		t.Errorf("drawn %d, omitted %d, listed op drawn %v; want %d, 50, true", drawn, tl.Omitted, listed, htmlpage.MaxTimelineAttempts)
	}
}

func TestTimelines_KeylessViolationFollowsItsIntent(t *testing.T) {
	t.Parallel()
	h := loadHistory(t, `{"type":"meta","v":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"lamp","tenant":"t1","attempt":1,"ns":1000000}
{"type":"info","op":1,"ns":5000000,"error":"timeout"}
{"type":"invoke","op":2,"intent":"lamp","tenant":"t1","attempt":2,"ns":6000000}
{"type":"invoke","op":3,"intent":"chair","tenant":"t1","attempt":1,"ns":6500000}
{"type":"ok","op":2,"ns":7000000,"resp":{"status":201,"body":"{}"}}
{"type":"ok","op":3,"ns":7000000,"resp":{"status":201,"body":"{}"}}
{"type":"effect","tenant":"t1","intent":"lamp","effect":"order 1","ns":8000000}
{"type":"effect","tenant":"t1","intent":"lamp","effect":"order 2","ns":8000000}
{"type":"effect","tenant":"t1","intent":"chair","effect":"order 3","ns":8000000}
`)
	tls := htmlpage.Timelines(violatingReport("h", report.Violation{Tenant: "t1", Intent: "lamp", Ops: []int64{1, 2}}), map[string]*history.History{"h": h})
	tl := tls[0]
	var ops []int64
	for _, b := range tl.Lanes[0].Bars {
		ops = append(ops, b.Op)
	}
	if !reflect.DeepEqual(ops, []int64{1, 2}) || len(tl.Effects) != 2 {
		t.Errorf("ops %v, %d effects; want [1 2] and 2 (another intent's keyless request is not this key's story)", ops, len(tl.Effects))
	}
}

func TestTimelines_MissingHistory(t *testing.T) {
	t.Parallel()
	rep := violatingReport("gone.jsonl", report.Violation{Tenant: "t", Key: "k", Ops: []int64{1}, Explanation: "x"})
	tls := htmlpage.Timelines(rep, nil)
	if len(tls) != 1 || tls[0].Missing != "history gone.jsonl was not loaded" || len(tls[0].Lanes) != 0 || tls[0].Explanation != "x" {
		t.Errorf("timelines: %+v", tls)
	}
}

func TestTimelines_RunsWithoutHistoryFileDoNotShareOne(t *testing.T) {
	t.Parallel()
	v := report.Violation{Tenant: "t1", Key: "k-9", Intent: "i1", Ops: []int64{1, 2}}
	run := violatingReport("", v).Runs[0]
	rep := report.New([]report.Run{run, run})
	if k0, k1 := htmlpage.HistoryKey(rep.Runs[0], 0), htmlpage.HistoryKey(rep.Runs[1], 1); k0 != "#0" || k1 != "#1" {
		t.Fatalf("keys %q %q, want #0 #1", k0, k1)
	}
	tls := htmlpage.Timelines(rep, map[string]*history.History{"#1": loadHistory(t, fixture)})
	if len(tls) != 2 || tls[0].Missing == "" || tls[1].Missing != "" || tls[1].Run != 1 || len(tls[1].Lanes) != 2 {
		t.Errorf("timelines: %+v", tls)
	}
	if k := htmlpage.HistoryKey(violatingReport("h.jsonl", v).Runs[0], 3); k != "h.jsonl" {
		t.Errorf("a run with a history file is keyed by its path, got %q", k)
	}
}

func TestTimelines_CapPerRun(t *testing.T) {
	t.Parallel()
	var vs []report.Violation
	for i := range htmlpage.MaxTimelinesPerRun + 3 {
		vs = append(vs, report.Violation{Key: fmt.Sprint("k", i)})
	}
	rep := report.New([]report.Run{{Steps: []report.Step{{Invariants: []report.Invariant{{Name: "exactly-once", Violations: vs}}}}}})
	if n := len(htmlpage.Timelines(rep, nil)); n != htmlpage.MaxTimelinesPerRun {
		t.Errorf("got %d timelines, want %d", n, htmlpage.MaxTimelinesPerRun)
	}
}

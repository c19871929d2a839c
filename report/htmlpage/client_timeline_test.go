package htmlpage_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// clientReport checks the client golden at path (under
// testdata/histories) with the client suite, as a client run's report is
// made, and returns it with its timelines.
func clientReport(tb testing.TB, path string) (report.Report, []htmlpage.Timeline) {
	tb.Helper()
	full := filepath.Join("..", "..", "testdata", "histories", path)
	b, err := os.ReadFile(full)
	if err != nil {
		tb.Fatal(err)
	}
	h := loadHistory(tb, string(b))
	if !h.Client() {
		tb.Fatalf("%s is not a client run's history", path)
	}
	suite, err := checkers.ForContract(checkers.DefaultContract(), checkers.DefaultNames(h.Meta.Mode)...)
	if err != nil {
		tb.Fatal(err)
	}
	name := filepath.ToSlash(full)
	rep := report.New([]report.Run{report.FromCheck(name, h, suite.Check(h, h.Effects))})
	return rep, htmlpage.Timelines(rep, map[string]*history.History{name: h})
}

// timelineOf returns the timeline of the first violation of invariant.
func timelineOf(tb testing.TB, tls []htmlpage.Timeline, invariant string) htmlpage.Timeline {
	tb.Helper()
	for _, t := range tls {
		if t.Invariant == invariant {
			return t
		}
	}
	tb.Fatalf("no %s timeline among %d", invariant, len(tls))
	return htmlpage.Timeline{}
}

// TestTimelines_ClientTrails holds a client run's timeline to its story,
// on real client goldens: lanes are intents, and each intent's trail has
// every attempt with its key (a changed key marked), the gap against the
// Retry-After asked for, who answered, and the belief next to the truth.
func TestTimelines_ClientTrails(t *testing.T) {
	t.Parallel()
	t.Run("a re-keyed intent", func(t *testing.T) {
		t.Parallel()
		_, tls := clientReport(t, "key-stable/client-new-key-per-retry-bad.jsonl")
		tl := timelineOf(t, tls, "key-stable")
		if len(tl.Lanes) != 1 || tl.Lanes[0].Intent != "i-1" || tl.Lanes[0].Label != "intent i-1" {
			t.Fatalf("lanes %+v: want one lane, intent i-1", tl.Lanes)
		}
		if len(tl.Trails) != 1 {
			t.Fatalf("%d trails, want 1", len(tl.Trails))
		}
		tr := tl.Trails[0]
		if tr.Intent != "i-1" || tr.Keys != 2 || len(tr.Steps) != 2 {
			t.Fatalf("trail %+v: want i-1, 2 keys, 2 attempts", tr)
		}
		first, second := tr.Steps[0], tr.Steps[1]
		if first.Rekeyed || first.HasGap || first.By != "proxy, forwarded" || first.Answer != "no answer (reset after execution)" {
			t.Errorf("attempt 1: %+v", first)
		}
		if !second.Rekeyed || second.Key != "k-b" || second.PrevKey != "k-a" || !second.HasGap || second.GapMS != 60 || second.By != "upstream" || second.Answer != "201" {
			t.Errorf("attempt 2: %+v; want a new key k-b after k-a, 60 ms later, 201 from the upstream", second)
		}
		if tr.Belief != "success" || tr.Truth != "executed" || tr.Verdict != "agrees" || len(tr.Effects) != 2 {
			t.Errorf("belief %q, truth %q (%v), verdict %q; want success, executed (2 effects), agrees", tr.Belief, tr.Truth, tr.Effects, tr.Verdict)
		}
	})
	t.Run("a Retry-After not honoured", func(t *testing.T) {
		t.Parallel()
		_, tls := clientReport(t, "retry-after-honoured/client-429-ignored-bad.jsonl")
		tr := timelineOf(t, tls, "retry-after-honoured").Trails[0]
		if s := tr.Steps[0]; s.By != "proxy, not forwarded" || s.Answer != "429" || s.AskedMS != 0 {
			t.Errorf("attempt 1: %+v; want a 429 from the proxy, not forwarded", s)
		}
		if s := tr.Steps[1]; s.AskedMS != 1000 || s.GapMS != 100 || !s.Short || s.Rekeyed {
			t.Errorf("attempt 2: %+v; want 100 ms after a Retry-After of 1000 ms, short, same key", s)
		}
	})
	t.Run("a Retry-After honoured", func(t *testing.T) {
		t.Parallel()
		rep, _ := clientReport(t, "retry-after-honoured/client-429-waited-ok.jsonl")
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "histories", "retry-after-honoured", "client-429-waited-ok.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		// A passing run draws nothing; its intent's trail, asked for,
		// says the wait was kept.
		v := report.Violation{Tenant: "t1", Key: "k-1", Intent: "i-1", Ops: []int64{1, 2}}
		rep.Runs[0].Steps[0].Invariants[0].Violations = []report.Violation{v}
		tls := htmlpage.Timelines(rep, map[string]*history.History{rep.Runs[0].History: loadHistory(t, string(b))})
		for _, s := range tls[0].Trails[0].Steps[1:] {
			if s.AskedMS == 0 || s.Short {
				t.Errorf("attempt %d: %+v; want a Retry-After kept", s.Number, s)
			}
		}
	})
	t.Run("a failure believed of an executed intent", func(t *testing.T) {
		t.Parallel()
		_, tls := clientReport(t, "truthful-outcome/client-timeout-is-failure-bad.jsonl")
		tr := timelineOf(t, tls, "truthful-outcome").Trails[0]
		if tr.Belief != "failure" || tr.Exit != 1 || tr.Truth != "executed" || tr.Verdict != "contradicts" || strings.Join(tr.Effects, ",") != "order ord_i-1_0" {
			t.Errorf("trail %+v: want failure (exit 1) against executed (order ord_i-1_0), contradicts", tr)
		}
	})
	t.Run("a server run has none", func(t *testing.T) {
		t.Parallel()
		if tl := fixtureTimeline(t); tl.Trails != nil || tl.Lanes[0].Intent != "" {
			t.Errorf("a server run's timeline has trails %+v or intent lanes", tl.Trails)
		}
	})
}

// TestWriteHTML_ClientTrails holds the page of client runs to what a
// reader needs without scripts or sight: a changed key said as "new key"
// in the table's row and drawn as a break in the SVG, a gap shorter than
// the Retry-After asked said as such, the proxy's answers named, and the
// belief next to the truth in each intent's caption.
func TestWriteHTML_ClientTrails(t *testing.T) {
	t.Parallel()
	var runs []report.Run
	var tls []htmlpage.Timeline
	for _, path := range []string{
		"key-stable/client-new-key-per-retry-bad.jsonl",
		"retry-after-honoured/client-429-ignored-bad.jsonl",
		"truthful-outcome/client-timeout-is-failure-bad.jsonl",
	} {
		rep, ts := clientReport(t, path)
		for _, tl := range ts {
			tl.Run = len(runs)
			tls = append(tls, tl)
		}
		runs = append(runs, rep.Runs...)
	}
	page := renderHTML(t, report.New(runs), tls)
	// The tables are the story in text: take each one's rows.
	tables := regexp.MustCompile(`(?s)<table class="trail" data-intent="i-1">.*?</table>`).FindAllString(page, -1)
	if len(tables) != len(tls) {
		t.Fatalf("%d trail tables, want one per timeline (%d)", len(tables), len(tls))
	}
	want := []struct {
		table int
		has   []string
	}{
		// key-stable: the new key, in words, on the second attempt's row.
		{0, []string{
			`2 attempts, 2 keys. The client believed <strong>success (exit 0, printing &#34;ord_i-1&#34;)</strong>; the upstream: <strong>executed: order ord_i-1_0, order ord_i-1_1</strong> — <span class="verdict agrees">they agree</span>.</caption>`,
			`<tr class="step"><td class="num">1</td><td class="num">1</td><td><code>k-a</code></td><td class="num">first attempt</td><td class="num">—</td><td><span class="sw info"></span>no answer (reset after execution)</td><td>proxy, forwarded</td></tr>`,
			`<tr class="step rekey"><td class="num">2</td><td class="num">2</td><td><strong class="break">new key</strong> <code>k-b</code> (was <code>k-a</code>)</td><td class="num">60.0 ms</td><td class="num">—</td><td><span class="sw s2xx"></span>201</td><td>upstream</td></tr>`,
		}},
		// retry-after-honoured: the gap against the 1000 ms asked for.
		{2, []string{
			`<td><span class="sw s4xx"></span>429</td><td>proxy, not forwarded</td></tr>`,
			`<td class="num">100.0 ms <strong class="short">shorter than asked</strong></td><td class="num">1000 ms</td>`,
		}},
		// truthful-outcome: the belief against the truth.
		{3, []string{
			`The client believed <strong>failure (exit 1)</strong>; the upstream: <strong>executed: order ord_i-1_0</strong> — <span class="verdict contradicts">they contradict each other</span>.</caption>`,
		}},
	}
	for _, w := range want {
		for _, s := range w.has {
			if !strings.Contains(tables[w.table], s) {
				t.Errorf("trail table %d lacks\n%s\nin\n%s", w.table, s, tables[w.table])
			}
		}
	}
	// The drawing: intent lanes, a break before the re-keyed attempt, the
	// asked-for wait marked short, and the legend for both.
	for _, s := range []string{
		`<text class="lane-label" x="8" y="53">intent i-1</text>`,
		`<line class="rekey"`, `<title>key changed before op 2: k-b, was k-a</title></line><text class="rekey-label"`,
		`<rect class="wait short"`, `<title>Retry-After asked for 1000 ms before op 2; it came after 100.0 ms: sooner than asked (the wait runs past the drawing&#39;s end)</title>`,
		`aria-label="timeline of intent i-1, drawn with the table below"`,
		`<li><span class="sym rekey">┃</span>new key: the intent's key changed</li>`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	if n := strings.Count(page, `<line class="rekey"`); n != 2 {
		t.Errorf("%d key breaks drawn, want 2 (the re-keyed intent, in its two violations' timelines)", n)
	}
	// A server run's page has none of it.
	rep, stls := checkedReport(t, examplePath)
	if server := renderHTML(t, rep, stls); strings.Contains(server, `class="trail"`) || strings.Contains(server, `class="client"`) || strings.Contains(server, "new key") {
		t.Error("a server run's page carries a client run's trails")
	}
}

// TestWriteHTML_ClientTrailsFolded holds a recorded outage (retryablehttp
// against twelve intents, in lockstep) to a page that stays readable: one
// lane per intent, the first intents' tables open and the rest folded, in
// a <details> that opens without scripts.
func TestWriteHTML_ClientTrailsFolded(t *testing.T) {
	t.Parallel()
	rep, tls := clientReport(t, "backoff/client-recorded-retryablehttp-outage-bad.jsonl")
	tl := timelineOf(t, tls, "backoff")
	if len(tl.Lanes) != 12 || len(tl.Trails) != 12 {
		t.Fatalf("%d lanes, %d trails; want one per intent of the outage (12)", len(tl.Lanes), len(tl.Trails))
	}
	page := renderHTML(t, rep, tls)
	open, folded, ok := strings.Cut(page, `<details class="trails-more"><summary>9 more intents</summary>`)
	if !ok {
		t.Fatal("the page does not fold the intents past the first three")
	}
	if n, m := strings.Count(open, `<table class="trail"`), strings.Count(folded, `<table class="trail"`); n != 3 || m != 9 {
		t.Errorf("%d tables open, %d folded; want 3 and 9", n, m)
	}
}

// TestWriteText_ClientKeySequence holds the summary of a client violation
// to its intent's keys in one line, when the intent changed its key, and
// the JSON report to the same sequence.
func TestWriteText_ClientKeySequence(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ path, line string }{
		{"key-stable/client-new-key-per-retry-bad.jsonl", "   keys of intent i-1, in the order sent: k-a → k-b\n"},
		{"key-stable/client-three-keys-after-502s-bad.jsonl", "   keys of intent i-7, in the order sent: k-a → k-b → k-c\n"},
	} {
		rep, _ := clientReport(t, c.path)
		var buf strings.Builder
		report.WriteText(&buf, rep)
		if !strings.Contains(buf.String(), c.line) {
			t.Errorf("%s: the summary lacks %q:\n%s", c.path, c.line, buf.String())
		}
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(js), `"keys":["k-`) {
			t.Errorf("%s: the JSON report lacks the key sequence", c.path)
		}
	}
	// An intent that kept its key, and a server run, have no such line.
	for _, rep := range []report.Report{
		func() report.Report {
			r, _ := clientReport(t, "retry-after-honoured/client-429-ignored-bad.jsonl")
			return r
		}(),
		func() report.Report { r, _ := checkedReport(t, examplePath); return r }(),
	} {
		var buf strings.Builder
		report.WriteText(&buf, rep)
		if strings.Contains(buf.String(), "keys of intent") {
			t.Errorf("a key sequence where no key changed:\n%s", buf.String())
		}
	}
}

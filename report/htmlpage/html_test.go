package htmlpage_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
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

// examplePath is the violating example history shipped in testdata.
var examplePath = filepath.Join("..", "..", "testdata", "examples", "response-drop-duplicate.jsonl")

// checkedReport checks the history at path with the default checkers and
// returns its report and timelines, the way `idemchaos check --report` does.
func checkedReport(tb testing.TB, path string) (report.Report, []htmlpage.Timeline) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	h := loadHistory(tb, string(b))
	name := strings.TrimPrefix(filepath.ToSlash(path), "../../") // as the CLI, run from the repository root, names it
	rep := report.New([]report.Run{report.FromCheck(name, h, checkers.Default().Check(h, h.Effects))})
	return rep, htmlpage.Timelines(rep, map[string]*history.History{name: h})
}

func renderHTML(tb testing.TB, rep report.Report, tls []htmlpage.Timeline) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := htmlpage.Write(&buf, rep, tls); err != nil {
		tb.Fatalf("WriteHTML: %v", err)
	}
	return buf.String()
}

func TestWriteHTML_Example(t *testing.T) {
	t.Parallel()
	rep, tls := checkedReport(t, examplePath)
	if rep.Verdict != "violation" || len(tls) != 1 || tls[0].Key != "k-1" {
		t.Fatalf("the example must violate exactly-once on k-1: verdict %s, %d timelines", rep.Verdict, len(tls))
	}
	page := renderHTML(t, rep, tls)
	for _, want := range []string{
		`<section class="timeline" id="v1" data-key="k-1" data-tenant="t1" data-invariant="exactly-once">`,
		`produced 2 order effects`,
		`Likely cause:`,
		`<span class="badge violation">VIOLATION</span>`,
		`<code>testdata/examples/response-drop-duplicate.jsonl</code>`,
		`fault response-drop on op 1`, // the aimed fault's tip
		`>2 effects: order o-9912, order o-9913</text>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<rect class="attempt `); n != 2 {
		t.Errorf("drew %d attempt bars, want 2", n)
	}
	if n := strings.Count(page, `<rect class="attempt info listed"`); n != 1 {
		t.Errorf("op 1 (dropped response) must be an outlined info bar; found %d", n)
	}
	if n := strings.Count(page, `<rect class="attempt s2xx listed"`); n != 1 {
		t.Errorf("op 2 must be an outlined 2xx bar; found %d", n)
	}
}

// TestWriteHTML_ContentSecurityPolicy pins that the page allows its own
// style and script by hash and nothing else, so the hashes must match the
// bytes the page really carries.
func TestWriteHTML_ContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	rep, tls := checkedReport(t, examplePath)
	page := renderHTML(t, rep, tls)
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if csp == nil {
		t.Fatal("no Content-Security-Policy meta")
	}
	policy := html.UnescapeString(csp[1])
	for _, el := range []string{"style", "script"} {
		m := regexp.MustCompile(`(?s)<`+el+`>(.*?)</`+el+`>`).FindAllStringSubmatch(page, -1)
		if len(m) != 1 {
			t.Fatalf("want exactly one <%s>, found %d", el, len(m))
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(policy, el+"-src "+h) {
			t.Errorf("policy %q does not allow the page's %s (%s)", policy, el, h)
		}
	}
	if !strings.Contains(policy, "default-src 'none'") {
		t.Errorf("policy %q must deny by default (no network)", policy)
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("the page must not load anything from the network")
	}
}

// hostile is what a system under test could put in keys, tenants and bodies.
var hostile = []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}

// hostileJSONL is a violating history with both payloads in every field the
// page shows: scenario, tenant, key, intent, body, error, fault detail and
// effect.
func hostileJSONL(payloads []string) string {
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) }
	p0, p1 := payloads[0], payloads[1]
	key, tenant := esc("k-9"+p0+p1), esc("t"+p1+p0)
	body := esc(`{"note":"` + esc(p0+p1) + `"}`)
	lines := []string{
		`{"type":"meta","v":1,"scenario":"` + esc(p0) + `","seed":1,"effects_recorded":true}`,
		`{"type":"invoke","op":1,"intent":"` + esc(p1) + `","tenant":"` + tenant + `","key":"` + key + `","attempt":1,"client":1,"ns":1000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}`,
		`{"type":"fault","fault":"response-drop","op":1,"ns":1500000,"detail":{"x":"` + esc(p0) + `"}}`,
		`{"type":"info","op":1,"ns":50000000,"error":"` + esc(p1) + `"}`,
		`{"type":"invoke","op":2,"intent":"` + esc(p1) + `","tenant":"` + tenant + `","key":"` + key + `","attempt":2,"client":1,"ns":60000000,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}`,
		`{"type":"ok","op":2,"ns":61000000,"resp":{"status":201,"body":"` + body + `"}}`,
		`{"type":"effect","tenant":"` + tenant + `","key":"` + key + `","effect":"order ` + esc(p0) + `","ns":90000000}`,
		`{"type":"effect","tenant":"` + tenant + `","key":"` + key + `","effect":"order ` + esc(p1) + `","ns":90000000}`,
	}
	return strings.Join(lines, "\n") + "\n"
}

// hostileHistory checks [hostileJSONL] and returns its report and timelines.
func hostileHistory(tb testing.TB, payloads []string) (report.Report, []htmlpage.Timeline) {
	tb.Helper()
	h := loadHistory(tb, hostileJSONL(payloads))
	rep := report.New([]report.Run{report.FromCheck("hostile.jsonl", h, checkers.Default().Check(h, h.Effects))})
	if rep.Verdict != "violation" {
		tb.Fatalf("the hostile history must violate exactly-once, got %s", rep.Verdict)
	}
	return rep, htmlpage.Timelines(rep, map[string]*history.History{"hostile.jsonl": h})
}

func TestWriteHTML_EscapesUntrustedStrings(t *testing.T) {
	t.Parallel()
	rep, tls := hostileHistory(t, hostile)
	rep.Runs[0].Replay = "idemchaos run -s " + hostile[1]
	rep.Runs[0].Error = hostile[0]
	page := renderHTML(t, rep, tls)
	lower := strings.ToLower(page)
	if strings.Contains(lower, "<script>alert") {
		t.Error("an untrusted <script> reached the page unescaped")
	}
	if n := strings.Count(lower, "<script"); n != 1 {
		t.Errorf("found %d <script elements, want only the page's own", n)
	}
	if strings.Contains(lower, "<img") {
		t.Error("an untrusted string broke out of an attribute or made an element")
	}
	// The payload may only survive as inert, escaped text: every onerror=
	// is followed by the escaped '>' of the payload, never by a real one.
	if a, b := strings.Count(page, "onerror="), strings.Count(page, "onerror=alert(1)&gt;"); a != b || a == 0 {
		t.Errorf("%d onerror= in the page, %d of them escaped text; want all and at least one (the strings must be shown)", a, b)
	}
	for _, want := range []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped payload %q", want)
		}
	}
	if !strings.Contains(page, `data-key="k-9&lt;script&gt;`) {
		t.Error("the violating key's section must carry the (escaped) key")
	}
}

func TestWriteHTML_Matrix(t *testing.T) {
	t.Parallel()
	rep := report.New(nil)
	rep.Matrix = &report.Matrix{OK: false, ElapsedMS: 1234,
		Reference: report.MatrixRow{Clean: true, Runs: 3, ElapsedMS: 400, Requests: 90},
		Mutants: []report.MatrixRow{
			{Mutant: "check-then-insert", Pitfall: "racy claim", Expected: "exactly-once", Caught: true, By: []string{"exactly-once", "in-flight-conflict"}, Scenario: "double-click"},
			{Mutant: "no-lease", Expected: "eventually-decided", Error: "boom <b>"},
		}}
	page := renderHTML(t, rep, nil)
	for _, want := range []string{
		"<h2>Catch matrix</h2>", "NOT OK", "<td>CLEAN</td>", "<code>check-then-insert</code>", "<td>exactly-once, in-flight-conflict</td>",
		"<td>CAUGHT</td>", "<td>MISSED</td>", "error: boom &lt;b&gt;", "1234 ms",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("matrix lacks %q", want)
		}
	}
	if strings.Contains(renderHTML(t, report.New(nil), nil), "Catch matrix") {
		t.Error("a report without a matrix must not show one")
	}
}

func TestWriteHTML_RunWithoutHistory(t *testing.T) {
	t.Parallel()
	rep := violatingReport("gone.jsonl", report.Violation{Tenant: "t1", Key: "k-1", Ops: []int64{3, 4}, Explanation: "two effects"})
	page := renderHTML(t, rep, htmlpage.Timelines(rep, nil))
	for _, want := range []string{"No timeline: history gone.jsonl was not loaded. Ops 3, 4.", "two effects",
		"<code class=\"cmd\">idemchaos run -s fixture.yaml --seed 7</code>", "replay-identical", "<span class=\"badge pass\">PASS</span>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<svg") {
		t.Error("no history, no drawing")
	}
}

func TestWriteHTML_FixtureDrawing(t *testing.T) {
	t.Parallel()
	page := renderHTML(t, violatingReport("h.jsonl", report.Violation{Tenant: "t1", Key: "k-9", Intent: "i1", Ops: []int64{1, 2}}),
		[]htmlpage.Timeline{fixtureTimeline(t)})
	counts := map[string]int{
		`<rect class="attempt `:       6,
		`<rect class="region`:         2,
		`<polygon class="fault-mark"`: 2,
		`<polygon class="effect"`:     2,
		`<rect class="lane`:           3, // two client lanes and the effects row
		`class="attempt info listed"`: 1,
		`class="attempt info open"`:   1,
		`class="attempt s4xx"`:        1,
		`class="attempt s5xx"`:        1,
		`class="attempt fail"`:        1,
	}
	for s, want := range counts {
		if n := strings.Count(page, s); n != want {
			t.Errorf("%d × %q, want %d", n, s, want)
		}
	}
}

// TestWriteHTML_ListsViolationsWithoutTimeline pins that the page tells the
// whole story even past the timeline cap, or with no timelines at all.
func TestWriteHTML_ListsViolationsWithoutTimeline(t *testing.T) {
	t.Parallel()
	var vs []report.Violation
	for i := range htmlpage.MaxTimelinesPerRun + 2 {
		vs = append(vs, report.Violation{Tenant: "t1", Key: fmt.Sprint("key-", i), Ops: []int64{int64(i)}, Explanation: fmt.Sprint("broken ", i)})
	}
	rep := report.New([]report.Run{{Scenario: "s", Verdict: "violation", Steps: []report.Step{{Invariants: []report.Invariant{
		{Name: "exactly-once", Verdict: "violation", Violations: vs}}}}}})
	tls := htmlpage.Timelines(rep, nil)
	if last := tls[len(tls)-1]; last.Violation != htmlpage.MaxTimelinesPerRun-1 {
		t.Errorf("last timeline is of violation %d, want %d", last.Violation, htmlpage.MaxTimelinesPerRun-1)
	}
	page := renderHTML(t, rep, tls)
	if n := strings.Count(page, `<section class="timeline"`); n != htmlpage.MaxTimelinesPerRun {
		t.Errorf("%d timelines drawn, want %d", n, htmlpage.MaxTimelinesPerRun)
	}
	for _, i := range []int{htmlpage.MaxTimelinesPerRun, htmlpage.MaxTimelinesPerRun + 1} {
		if want := fmt.Sprintf("key <code>key-%d</code>, ops %d: broken %d</li>", i, i, i); !strings.Contains(page, want) {
			t.Errorf("violation %d past the cap is not listed (%q)", i, want)
		}
	}
	bare := renderHTML(t, rep, nil)
	if n := strings.Count(bare, "<li><strong>exactly-once</strong>"); n != len(vs) {
		t.Errorf("without timelines the page lists %d violations, want all %d", n, len(vs))
	}
}

// A catch matrix's page leads with the matrix; a mutant's violations are
// what the matrix expected, folded under the mutant, never a list in front.
func TestWriteHTML_MatrixFirstMutantViolationsFolded(t *testing.T) {
	t.Parallel()
	rep, tls := checkedReport(t, examplePath)
	rep.Runs[0].Mutant = "no-key"
	rep.Matrix = &report.Matrix{OK: true, Mutants: []report.MatrixRow{{Mutant: "no-key", Caught: true, Expected: "exactly-once",
		Pitfall: "the key is ignored", By: []string{"exactly-once"}}}}
	page := renderHTML(t, rep, tls)
	matrix := strings.Index(page, "<h2>Catch matrix</h2>")
	folded := strings.Index(page, "Expected violations, by mutant")
	if matrix < 0 || folded < 0 || matrix > folded {
		t.Fatalf("matrix at %d, folded violations at %d: want the matrix first", matrix, folded)
	}
	if strings.Contains(page, `<nav class="index" aria-label="violations">`) {
		t.Fatal("a mutant's expected violations are listed unfolded")
	}
	if !strings.Contains(page, "<details><summary>") || !strings.Contains(page, `<a href="#v1">exactly-once</a>`) {
		t.Fatal("the mutant's violations are not folded under a summary with their links")
	}
}

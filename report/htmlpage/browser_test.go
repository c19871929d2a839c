package htmlpage_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// screenshotTo also writes the example page's screenshot there; it is how
// docs/report-example.png is made:
//
//	go test ./report/htmlpage/ -run TestWriteHTML_InBrowser -report.screenshot=$PWD/docs/report-example.png
var screenshotTo = flag.String("report.screenshot", "", "also write the example report's screenshot (PNG) to this file")

const installChromium = "apt-get update && apt-get install -y chromium"

// chromiumPath finds the browser. The browser test runs in CI, so a missing
// browser is a broken setup and fails; IDEMCHAOS_BROWSER_TESTS=0 is the one
// explicit way to skip it (on a laptop without chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if os.Getenv("IDEMCHAOS_BROWSER_TESTS") == "0" {
		t.Skip("IDEMCHAOS_BROWSER_TESTS=0: browser test skipped")
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatalf("chromium not found (neither on PATH nor /usr/bin/chromium): the HTML report's browser test needs it.\n"+
		"Install it with:  %s\n(or set IDEMCHAOS_BROWSER_TESTS=0 to skip this test on a machine without it)", installChromium)
	return ""
}

// browser is one headless chromium with a fresh profile, closed with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // we run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium makes directories of its own in $TMPDIR and never
		// removes them; give it one that the test removes.
		chromedp.Env("TMPDIR="+shortTempDir(t)),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return bctx
}

// shortTempDir is a temp dir removed after the test, with a short path:
// Chromium puts a unix socket in it, and t.TempDir's paths can be longer
// than a socket path may be (108 bytes).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// pageLog collects what the page said and asked for while it loaded.
type pageLog struct {
	mu       sync.Mutex
	problems []string // console errors, exceptions, error log entries (CSP violations are these)
	requests []string // every URL the page requested
}

func (l *pageLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		l.problems = append(l.problems, "exception: "+msg)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			l.problems = append(l.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			l.problems = append(l.problems, fmt.Sprintf("log %s (%s): %s", e.Entry.Level, e.Entry.Source, e.Entry.Text))
		}
	case *network.EventRequestWillBeSent:
		l.requests = append(l.requests, e.Request.URL)
	}
}

// openReport writes the report to a file, opens it and returns the page's
// log once it has loaded.
func openReport(t *testing.T, ctx context.Context, name string, rep report.Report, tls []htmlpage.Timeline) (*pageLog, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlpage.Write(f, rep, tls); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	pl := &pageLog{}
	if err := chromedp.Listen(ctx, pl.listen); err != nil {
		t.Fatalf("start chromium (%s): %v", installChromium, err)
	}
	url := "file://" + file
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return pl, url
}

// eval runs a script returning JSON-able data.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// checkClean asserts the page logged no error and requested nothing but
// itself. An evaluation round trip first makes sure every event the load
// caused has been delivered to the listener.
func checkClean(t *testing.T, ctx context.Context, pl *pageLog, url string) {
	t.Helper()
	eval[bool](t, ctx, `true`)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, p := range pl.problems {
		t.Errorf("page problem: %s", p)
	}
	for _, r := range pl.requests {
		if r != url {
			t.Errorf("the page requested %s: a report must need no network and no other file", r)
		}
	}
}

func TestWriteHTML_InBrowser(t *testing.T) {
	ctx := browser(t)

	t.Run("example", func(t *testing.T) {
		rep, tls := checkedReport(t, examplePath)
		pl, url := openReport(t, ctx, "example.html", rep, tls)
		checkClean(t, ctx, pl, url)
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-key="k-1"] svg rect.attempt').length`); n != 2 {
			t.Errorf("k-1's timeline shows %d attempt bars, want 2", n)
		}
		// The embedded script ran (the CSP allowed it by hash): it turned
		// the SVG titles into hover tooltips.
		if n := eval[int](t, ctx, `document.querySelectorAll('svg.tl title').length`); n != 0 {
			t.Errorf("%d SVG titles left: the page's script did not run", n)
		}
		w := eval[float64](t, ctx, `document.querySelector('[data-key="k-1"] svg').getBoundingClientRect().width`)
		if w < 600 {
			t.Errorf("the timeline is %v px wide in a 1280 px window; want it to use the page", w)
		}
		png := screenshot(t, ctx)
		if *screenshotTo != "" {
			if err := os.WriteFile(*screenshotTo, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("fixture and hostile strings", func(t *testing.T) {
		frep := violatingReport("h.jsonl", report.Violation{Tenant: "t1", Key: "k-9", Intent: "i1", Ops: []int64{1, 2},
			Explanation: "intent i1 produced 2 order effects"})
		hrep, _ := hostileHistory(t, pwn)
		rep := report.New(append(frep.Runs, hrep.Runs...))
		hs := map[string]*history.History{"h.jsonl": loadHistory(t, fixture), "hostile.jsonl": hostileLoaded(t, pwn)}
		pl, url := openReport(t, ctx, "hostile.html", rep, htmlpage.Timelines(rep, hs))
		checkClean(t, ctx, pl, url)
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-key="k-9"] svg rect.attempt').length`); n != 6 {
			t.Errorf("k-9's timeline shows %d attempt bars, want 6", n)
		}
		if p := eval[string](t, ctx, `typeof window.__pwned`); p != "undefined" {
			t.Errorf("an injected script ran: window.__pwned is %s", p)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('img, [onerror]').length`); n != 0 {
			t.Errorf("%d injected elements in the DOM", n)
		}
		if n := eval[int](t, ctx, `document.scripts.length`); n != 1 {
			t.Errorf("%d scripts in the DOM, want only the page's own", n)
		}
		// The hostile key reaches the DOM as text, intact.
		key := eval[string](t, ctx, `document.querySelectorAll('section.timeline')[1].dataset.key`)
		if want := "k-9" + pwn[0] + pwn[1]; key != want {
			t.Errorf("hostile key in the DOM = %q, want %q", key, want)
		}
		// Hovering op 2's bar shows its response body, as text only.
		tip := eval[json.RawMessage](t, ctx, `(() => {
			const bar = document.querySelectorAll('section.timeline')[1].querySelector('rect.attempt[data-op="2"]');
			const r = bar.getBoundingClientRect();
			const at = {bubbles: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2};
			bar.dispatchEvent(new MouseEvent('mouseover', at));
			bar.dispatchEvent(new MouseEvent('mousemove', at));
			const tip = document.getElementById('tip');
			return {hidden: tip.hidden, text: tip.textContent, children: tip.children.length};
		})()`)
		var got struct {
			Hidden   bool
			Text     string
			Children int
		}
		if err := json.Unmarshal(tip, &got); err != nil {
			t.Fatal(err)
		}
		if got.Hidden || got.Children != 0 || !strings.Contains(got.Text, pwn[0]) || !strings.Contains(got.Text, "status 201") {
			t.Errorf("tooltip of op 2 = %+v; want it shown, as text, with the body", got)
		}
		checkClean(t, ctx, pl, url)
		screenshot(t, ctx)
	})

	// With scripts off the page is the same report: every drawing, the
	// browser's own tooltips (the SVG titles the script would have moved),
	// the folded runs as native <details>, and links that land.
	t.Run("scripts off", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		if _, err := chromedp.Call(tab, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("disable scripts: %v", err)
		}
		rep, tls := checkedReport(t, examplePath)
		rep.Runs[0].Mutant = "no-key"
		rep.Matrix = &report.Matrix{OK: true, Mutants: []report.MatrixRow{{Mutant: "no-key", Caught: true, Expected: "exactly-once", By: []string{"exactly-once"}}}}
		pl, url := openReport(t, tab, "noscript.html", rep, tls)
		checkClean(t, tab, pl, url)
		if n := eval[int](t, tab, `document.querySelectorAll('[data-key="k-1"] svg rect.attempt').length`); n != 2 {
			t.Errorf("k-1's timeline shows %d attempt bars with scripts off, want 2", n)
		}
		if n := eval[int](t, tab, `document.querySelectorAll('svg.tl rect.attempt > title').length`); n != 2 {
			t.Errorf("%d bars keep their tooltip (SVG title) with scripts off, want 2", n)
		}
		if n := eval[int](t, tab, `document.querySelectorAll('[data-tip]').length`); n != 0 {
			t.Errorf("%d elements were rewritten: the page's script ran with scripts off", n)
		}
		// The folded run opens without a script, and its link lands.
		open := eval[bool](t, tab, `(() => { const d = document.querySelector('section.run details'); d.open = true; return d.querySelector('#v1') !== null && d.open; })()`)
		if !open {
			t.Error("the folded run does not open to its timeline")
		}
		if broken := eval[[]string](t, tab, `Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))`); len(broken) != 0 {
			t.Errorf("links to nothing: %v", broken)
		}
	})

	// A client run's page: the intents' tables read as text (the key
	// break said in words), the key break and the asked-for wait are in
	// the drawing with their tooltips, and folded intents open.
	t.Run("client runs", func(t *testing.T) {
		var runs []report.Run
		var tls []htmlpage.Timeline
		for _, path := range []string{"key-stable/client-new-key-per-retry-bad.jsonl", "retry-after-honoured/client-429-ignored-bad.jsonl",
			"backoff/client-recorded-retryablehttp-outage-bad.jsonl"} {
			rep, ts := clientReport(t, path)
			for _, tl := range ts {
				tl.Run = len(runs)
				tls = append(tls, tl)
			}
			runs = append(runs, rep.Runs...)
		}
		pl, url := openReport(t, ctx, "client.html", report.New(runs), tls)
		checkClean(t, ctx, pl, url)
		if got := eval[string](t, ctx, `document.querySelector('table.trail tr.rekey').innerText`); !strings.Contains(got, "new key k-b (was k-a)") {
			t.Errorf("the re-keyed attempt's row reads %q; want it to say the new key in words", got)
		}
		if got := eval[string](t, ctx, `document.querySelector('table.trail strong.short').parentElement.innerText`); got != "100.0 ms shorter than asked" {
			t.Errorf("the short gap reads %q", got)
		}
		for _, sel := range []string{"svg.tl line.rekey", "svg.tl rect.wait.short", "table.trail caption"} {
			if h := eval[float64](t, ctx, `document.querySelector('`+sel+`').getBoundingClientRect().height`); h <= 0 {
				t.Errorf("%s is not drawn (height %v)", sel, h)
			}
		}
		// The script turned the marks' titles into tooltips, as the bars'.
		if n := eval[int](t, ctx, `document.querySelectorAll('svg.tl line.rekey[data-tip], svg.tl rect.wait[data-tip]').length`); n < 3 {
			t.Errorf("%d key breaks and waits carry a tooltip, want every one (3 or more)", n)
		}
		if n := eval[int](t, ctx, `(() => { const d = document.querySelector('details.trails-more'); d.open = true; return d.querySelectorAll('table.trail').length; })()`); n != 9 {
			t.Errorf("the folded intents open to %d tables, want 9", n)
		}
		screenshot(t, ctx)
	})

	t.Run("failure repeated across runs", func(t *testing.T) {
		rep := sweep()
		pl, url := openReport(t, ctx, "sweep.html", rep, htmlpage.Timelines(rep, map[string]*history.History{"h/s1.jsonl": reuseHistory(t, "k-1")}))
		checkClean(t, ctx, pl, url)
		if n := eval[int](t, ctx, `document.querySelectorAll('svg.tl').length`); n != 1 {
			t.Errorf("%d drawings, want 1", n)
		}
		// Every link on the page (index, repeats, "the same failure as")
		// lands on an element of the page.
		if broken := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('a[href^="#"]')).map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))`); len(broken) != 0 {
			t.Errorf("links to nothing: %v", broken)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('section.timeline.repeat a[href="#v1"]').length`); n != 2 {
			t.Errorf("%d repeats link to the drawn timeline, want 2", n)
		}
	})
}

// pwn are payloads that would set window.__pwned if they ever ran.
var pwn = []string{`<script>window.__pwned=1</script>`, `"><img src=x onerror="window.__pwned=2">`}

func hostileLoaded(tb testing.TB, payloads []string) *history.History {
	tb.Helper()
	return loadHistory(tb, hostileJSONL(payloads))
}

// screenshot saves the whole page as a PNG in the test's temp dir.
func screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	file := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", file)
	return png
}

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/idemchaos/idemchaos/history"
)

// progress shows what a run is doing: a live spinner line on a terminal,
// plain periodic lines elsewhere, nothing decorative when CI is set.
type progress struct {
	w       io.Writer
	live    bool
	quiet   bool
	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	name    string
	started time.Time
	stop    chan struct{}
	wg      sync.WaitGroup

	sent, ok, info, fail, faults atomic.Int64
	// infoExplained is set once the line has said what info means, so a
	// reader who first sees "info 3" learns it is no error, and is told once.
	infoExplained bool
}

// infoMeaning is what the progress line's info count means, said the first
// time it shows a non-zero one: the outcome a client cannot know.
const infoMeaning = "  info = outcome unknown: a timeout or a reset after sending; the service may have executed it"

func (m *Main) newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	_, ci := m.LookupEnv("CI")
	if f, isFile := w.(*os.File); isFile && !ci && isatty.IsTerminal(f.Fd()) {
		p.live = true
	}
	if v, _ := m.LookupEnv("IDEMCHAOS_QUIET"); v != "" {
		p.quiet = true
	}
	return p
}

// event counts one history event (the recorder calls it; it must not block).
func (p *progress) event(e *history.Event) {
	switch e.Type {
	case history.TypeInvoke:
		p.sent.Add(1)
	case history.TypeOK:
		p.ok.Add(1)
	case history.TypeInfo:
		p.info.Add(1)
	case history.TypeFail:
		p.fail.Add(1)
	case history.TypeFault:
		if e.Action != "heal" {
			p.faults.Add(1)
		}
	}
}

func (p *progress) status() string {
	return fmt.Sprintf("%s: %d requests (ok %d, info %d, fail %d), %d faults, %s", p.name, p.sent.Load(), p.ok.Load(),
		p.info.Load(), p.fail.Load(), p.faults.Load(), time.Since(p.started).Round(100*time.Millisecond))
}

// start begins a phase named name.
func (p *progress) start(name, mutant string) {
	if p.quiet {
		return
	}
	p.done()
	p.mu.Lock()
	defer p.mu.Unlock()
	if mutant != "" {
		name += " [mutant " + mutant + "]"
	}
	p.name, p.started, p.stop = name, time.Now(), make(chan struct{})
	if p.live {
		p.bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(p.w), progressbar.OptionSpinnerType(14),
			progressbar.OptionSetDescription(p.status()), progressbar.OptionClearOnFinish())
	}
	every := 2 * time.Second
	if p.live {
		every = 150 * time.Millisecond
	}
	p.wg.Add(1)
	go func(stop chan struct{}) {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}(p.stop)
}

// tick redraws the live line, or prints the plain one; the first time it
// shows a non-zero info count it also says, once, what info means.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	explain := !p.infoExplained && p.info.Load() > 0
	if explain {
		p.infoExplained = true
	}
	if p.bar != nil {
		if explain {
			_ = p.bar.Clear()
			fmt.Fprintln(p.w, infoMeaning)
		}
		p.bar.Describe(p.status())
		_ = p.bar.Add(1)
		return
	}
	fmt.Fprintln(p.w, "… "+p.status())
	if explain {
		fmt.Fprintln(p.w, infoMeaning)
	}
}

// line prints a line above the live display.
func (p *progress) line(s string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintln(p.w, s)
}

// done ends the current phase.
func (p *progress) done() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	p.wg.Wait()
	p.mu.Lock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	p.mu.Unlock()
}

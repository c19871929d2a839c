package clients_test

// TestTruth measures each client's ground truth without idemchaos: every
// client, as a real process, against a scripted order server (an
// idempotent store behind one listener per invocation, each answer chosen
// by a probe's script), and the invariants it is seen to break must be the
// ones its Breaks lists — no more, no fewer.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/examples/clients"
)

// answer is what the scripted server does with one attempt.
type answer int

const (
	serve     answer = iota // execute (idempotently by key) and answer 201
	execReset               // execute, then reset the connection
	exec502                 // execute, then answer 502 as a gateway would
	execStall               // execute, then never answer
	tooMany                 // 429 Retry-After: 1, not executed
	busy                    // 503 Retry-After: 1, not executed
	inFlight                // 409 request_in_progress Retry-After: 1, not executed
	outage                  // 503 without Retry-After, not executed
	invalid                 // 422, not executed
	forbidden               // 403, not executed
)

// script picks the answer to the n-th attempt (1-based) of an invocation.
type script func(n int) answer

func first(a answer) script  { return firstN(1, a) }
func always(a answer) script { return func(int) answer { return a } }
func firstN(k int, a answer) script {
	return func(n int) answer {
		if n <= k {
			return a
		}
		return serve
	}
}

// indeterminate says the client cannot know whether the attempt executed.
func (a answer) indeterminate() bool { return a == execReset || a == exec502 || a == execStall }

// permanent is the status of an answer no re-send as it is can change.
func (a answer) permanent() int {
	switch a {
	case invalid:
		return 422
	case forbidden:
		return 403
	}
	return 0
}

type attempt struct {
	n       int
	key     string
	hasKey  bool
	body    []byte
	arrived time.Time
	// answered is when its answer was written (zero when none was).
	answered time.Time
	asked    time.Duration // the Retry-After it was answered with
	status   int           // the status it was answered with (0: none)
}

// store is the order service's state, shared by the listeners of a probe.
type store struct {
	mu      sync.Mutex
	byKey   map[string]stored
	created map[int]int // invocation → orders it created
	next    int
}

type stored struct {
	body  []byte
	owner int
	id    string
}

// execute creates the order (or finds the key's) and returns its id and
// whether the key was reused with another payload.
func (s *store) execute(inv int, key string, body []byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != "" {
		if o, ok := s.byKey[key]; ok {
			return o.id, !bytes.Equal(o.body, body)
		}
	}
	s.next++
	id := "ord_" + strconv.Itoa(s.next)
	s.created[inv]++
	if key != "" {
		s.byKey[key] = stored{body: body, owner: inv, id: id}
	}
	return id, false
}

// listener is one invocation's address.
type listener struct {
	inv      int
	s        *store
	script   script
	mu       sync.Mutex
	attempts []attempt
	srv      *http.Server
	url      string
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key, hasKey := r.Header.Get("Idempotency-Key"), r.Header.Get("Idempotency-Key") != ""
	l.mu.Lock()
	n := len(l.attempts) + 1
	l.attempts = append(l.attempts, attempt{n: n, key: key, hasKey: hasKey, body: body, arrived: time.Now()})
	l.mu.Unlock()
	done := func(status int, asked time.Duration) {
		l.mu.Lock()
		l.attempts[n-1].answered, l.attempts[n-1].asked, l.attempts[n-1].status = time.Now(), asked, status
		l.mu.Unlock()
	}
	refuse := func(status int, code string, retryAfter bool) {
		w.Header().Set("Content-Type", "application/json")
		var asked time.Duration
		if retryAfter {
			w.Header().Set("Retry-After", "1")
			asked = time.Second
		}
		done(status, asked)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":%q,"message":"scripted"}`, code)
	}
	switch a := l.script(n); a {
	case tooMany:
		refuse(429, "rate_limited", true)
	case busy:
		refuse(503, "unavailable", true)
	case inFlight:
		refuse(409, "request_in_progress", true)
	case outage:
		refuse(503, "unavailable", false)
	case invalid:
		refuse(422, "idempotency_key_reused", false)
	case forbidden:
		refuse(403, "forbidden", false)
	default:
		id, reused := l.s.execute(l.inv, key, body)
		switch {
		case reused:
			refuse(422, "idempotency_key_reused", false)
		case a == exec502:
			done(502, 0)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		case a == execReset || a == execStall:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			if a == execReset {
				conn.(*net.TCPConn).SetLinger(0)
			} else {
				// Wait for the client to give up (bounded).
				conn.SetReadDeadline(time.Now().Add(15 * time.Second))
				io.Copy(io.Discard, conn)
			}
			conn.Close()
		default:
			done(201, 0)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":%q,"sku":"sku-1","qty":1,"amount":100,"state":"pending"}`, id)
		}
	}
}

// invocation is one run of a client and what it did.
type invocation struct {
	exit     int
	attempts []attempt
	created  int
}

func (iv invocation) belief() string {
	switch iv.exit {
	case 0:
		return "success"
	case 75:
		return "unknown"
	}
	return "failure"
}

type probe struct {
	name   string
	script script
	// twins runs two invocations with the same body, one after the other.
	twins bool
	// crowd runs this many invocations at once (an outage hitting all).
	crowd int
}

var probes = []probe{
	{name: "lost-answer-reset", script: first(execReset)},
	{name: "gateway-502-after-execution", script: first(exec502)},
	{name: "stall-past-deadline", script: first(execStall)},
	{name: "every-attempt-502-after-execution", script: always(exec502)},
	{name: "every-attempt-reset-after-execution", script: always(execReset)},
	{name: "rate-limited", script: first(tooMany)},
	{name: "unavailable-retry-after", script: first(busy)},
	{name: "in-flight", script: first(inFlight)},
	{name: "permanent-422", script: always(invalid)},
	{name: "permanent-403", script: always(forbidden)},
	{name: "outage", script: firstN(5, outage), crowd: 12},
	{name: "always-unavailable", script: always(outage), crowd: 3},
	{name: "twins", script: always(serve), twins: true},
}

const body = `{"sku":"sku-1","qty":1,"amount":100}`

func run(t *testing.T, argv []string, p probe) []invocation {
	t.Helper()
	s := &store{byKey: map[string]stored{}, created: map[int]int{}}
	n := max(p.crowd, 1)
	if p.twins {
		n = 2
	}
	ls := make([]*listener, n)
	for i := range ls {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := &listener{inv: i, s: s, script: p.script, url: "http://" + ln.Addr().String()}
		l.srv = &http.Server{Handler: l}
		go l.srv.Serve(ln)
		t.Cleanup(func() { l.srv.Close() })
		ls[i] = l
	}
	out := make([]invocation, n)
	invoke := func(i int) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "IDEMCHAOS_URL="+ls[i].url, "IDEMCHAOS_PATH=/v1/orders",
			"IDEMCHAOS_TOKEN=tok-1", "IDEMCHAOS_BODY="+body, "IDEMCHAOS_INTENT=i"+strconv.Itoa(i))
		cmd.Stdin = strings.NewReader(body)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Errorf("%s: %v", argv[0], err)
		}
		out[i].exit = code
	}
	if p.twins {
		invoke(0)
		invoke(1)
	} else {
		var wg sync.WaitGroup
		for i := range ls {
			wg.Go(func() { invoke(i) })
		}
		wg.Wait()
	}
	for i, l := range ls {
		l.srv.Close()
		l.mu.Lock()
		out[i].attempts = slices.Clone(l.attempts)
		l.mu.Unlock()
		s.mu.Lock()
		out[i].created = s.created[i]
		s.mu.Unlock()
	}
	return out
}

// judge derives the invariants a client broke from what the probes saw.
// The rules are the invariants' definitions (issue 24, item 3), stated on
// the probes' own observations.
func judge(seen map[string][]invocation) map[string]string {
	broke := map[string]string{}
	say := func(inv, probe, why string, args ...any) {
		if _, ok := broke[inv]; !ok {
			broke[inv] = probe + ": " + fmt.Sprintf(why, args...)
		}
	}
	for _, p := range probes {
		for _, iv := range seen[p.name] {
			keys := map[string]bool{}
			for _, a := range iv.attempts {
				if a.hasKey {
					keys[a.key] = true
				}
				if !bytes.Equal(a.body, iv.attempts[0].body) {
					say("payload-stable", p.name, "attempt %d sent another body", a.n)
				}
			}
			if len(keys) > 1 {
				say("key-stable", p.name, "%d keys in %d attempts", len(keys), len(iv.attempts))
			}
			for i, a := range iv.attempts[1:] {
				prev := iv.attempts[i]
				if s := p.script(prev.n); !a.hasKey && s.indeterminate() {
					say("keyed-retry", p.name, "attempt %d re-sent without a key after an indeterminate outcome", a.n)
				}
				if s := p.script(prev.n).permanent(); s != 0 && bytes.Equal(a.body, prev.body) {
					say("no-retry-permanent", p.name, "attempt %d re-sent after a permanent %d", a.n, s)
				}
				if prev.asked > 0 && a.arrived.Sub(prev.answered) < prev.asked-5*time.Millisecond {
					say("retry-after-honoured", p.name, "attempt %d came %s after a Retry-After of %s", a.n, a.arrived.Sub(prev.answered).Round(time.Millisecond), prev.asked)
				}
			}
			if len(iv.attempts) > clients.Budget {
				say("bounded", p.name, "%d attempts, budget %d", len(iv.attempts), clients.Budget)
			}
			executed := iv.created > 0
			switch b := iv.belief(); {
			case b == "failure" && executed:
				say("truthful-outcome", p.name, "exit %d 'failed' although the order was created", iv.exit)
			case b == "success" && !executed:
				say("truthful-outcome", p.name, "exit 0 'succeeded' although nothing was created")
			}
			acked := slices.ContainsFunc(iv.attempts, func(a attempt) bool { return a.status/100 == 2 })
			switch {
			case iv.created > 1:
				say("exactly-once", p.name, "%d orders for one intent", iv.created)
			case iv.created == 0 && acked:
				say("exactly-once", p.name, "acknowledged, but no order of its own was created")
			}
		}
		if p.twins {
			iv := seen[p.name]
			if len(iv) == 2 && len(iv[0].attempts) > 0 && len(iv[1].attempts) > 0 && iv[0].attempts[0].hasKey && iv[0].attempts[0].key == iv[1].attempts[0].key {
				say("key-per-intent", p.name, "two intents sent one key")
			}
		}
	}
	if why := backoff(seen); why != "" {
		broke["backoff"] = why
	}
	return broke
}

// backoff judges growth and jitter on the outage probe: the typical gap
// of each retry across the crowd (the lower quartile of eight or more, the
// median of fewer) must not fall below half the longest typical gap before
// it and must end at least 1.5× the first; and the gaps
// of every retry must spread across the crowd. The spread is the
// interquartile range, which the few processes a loaded machine wakes late
// do not move: a no-jitter client's is scheduling noise, and one retry
// whose middle half falls within 5 ms or 3% of its median is lockstep —
// the rule the backoff checker applies (a 10 ms floor was within reach of
// a jittered client's first retry by chance: 12 waits drawn over a few
// tens of milliseconds)
// (twelve uniformly jittered waits have an IQR of about half their width).
func backoff(seen map[string][]invocation) string {
	for _, name := range []string{"outage"} {
		var gaps [][]time.Duration // by retry index, across the crowd
		for _, iv := range seen[name] {
			for i := 1; i < len(iv.attempts); i++ {
				if i > len(gaps) {
					gaps = append(gaps, nil)
				}
				gaps[i-1] = append(gaps[i-1], iv.attempts[i].arrived.Sub(iv.attempts[i-1].answered))
			}
		}
		var med []time.Duration
		lockstep := false
		for _, g := range gaps {
			if len(g) < 2 {
				continue
			}
			sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
			m := g[len(g)/2]
			// Growth reads the lower quartile of eight or more, as the
			// checker does: a stall that wakes half the crowd late
			// moves the median, not what the client chose.
			typical := m
			if len(g) >= 8 {
				typical = g[len(g)/4]
			}
			med = append(med, typical)
			if os.Getenv("TRUTH_DEBUG") != "" {
				fmt.Println(name, "gaps", g)
			}
			// Load only widens a spread: one retry whose waits all fall
			// within scheduling noise is lockstep, however noisy the others.
			if iqr := g[len(g)*3/4] - g[len(g)/4]; len(g) >= 8 && iqr < max(5*time.Millisecond, m*3/100) {
				lockstep = true
			}
		}
		longest := time.Duration(0)
		for i, m := range med {
			if i > 0 && m < longest/2 {
				return fmt.Sprintf("%s: retry %d waited %s after a wait of %s", name, i+1, m.Round(time.Millisecond), longest.Round(time.Millisecond))
			}
			longest = max(longest, m)
		}
		if len(med) >= 3 && float64(med[len(med)-1]) < 1.5*float64(med[0]) {
			return fmt.Sprintf("%s: waits %v do not grow", name, med)
		}
		if lockstep && len(med) > 0 {
			return fmt.Sprintf("%s: %d clients retried in lockstep (waits %v)", name, len(seen[name]), med)
		}
	}
	return ""
}

func TestTruth(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	var pkgs []string
	for _, c := range clients.Cases() {
		if c.Build != "" && !slices.Contains(pkgs, "./"+c.Build) {
			pkgs = append(pkgs, "./"+c.Build)
		}
	}
	build := exec.Command("go", append([]string{"build", "-o", bin + "/"}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range clients.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			seen := map[string][]invocation{}
			for _, p := range probes {
				seen[p.name] = run(t, c.Command(root, bin), p)
				if n := len(seen[p.name][0].attempts); n == 0 {
					t.Fatalf("%s: the client sent nothing", p.name)
				}
			}
			got := judge(seen)
			for _, inv := range clients.Invariants {
				why, broke := got[inv]
				_, truth := c.Breaks[inv]
				switch {
				case broke && !truth:
					t.Errorf("%s: seen broken (%s), but its truth says kept", inv, why)
				case !broke && truth:
					t.Errorf("%s: its truth says broken (%s), but no probe saw it", inv, c.Breaks[inv])
				}
			}
		})
	}
}

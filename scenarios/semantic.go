package scenarios

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/suggest"
)

// checkSemantics runs the rules a JSON Schema cannot say. Each rule reads
// the plain tree and skips values of the wrong type (the schema reported
// those), so one bad value does not hide the other problems of a file.
func (t *tree) checkSemantics() {
	if _, ok := t.val.(map[string]any); !ok {
		return
	}
	t.checkName()
	t.checkTarget()
	t.checkClient()
	t.checkConsumer()
	t.checkURL("/effects/url", "effects.url")
	t.checkFaults("/faults")
	t.checkContract()
	t.checkEffects()
	t.checkEndpoint()
	t.checkRequest()
	t.checkEffectPaths()
	t.checkRetyped()
	t.checkTraffic("/traffic", "/traffic")
	t.checkInvariants()
	t.checkSteps()
	t.checkDurations(t.val, "")
}

// durationKeys are the keys whose values are durations (outside fault
// params, which their decoder checks).
var durationKeys = map[string]bool{
	"lease": true, "retention": true, "retry_window": true, "visibility_timeout": true,
	"spread": true, "timeout": true, "min_backoff": true, "deadline": true, "base": true, "max": true,
	"max_retry_after": true, "at": true, "for": true, "settle": true, "bound": true, "wait": true,
}

// checkDurations finds durations the schema's pattern admits but Go cannot
// hold (more than about 292 years).
func (t *tree) checkDurations(v any, p string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			kp := ptr(p, k)
			if k == "params" {
				continue
			}
			if s, ok := x.(string); ok && durationKeys[k] && durationRE.MatchString(s) {
				if _, err := time.ParseDuration(s); err != nil {
					t.errorf(t.posOf(kp), "%s: %q is too long for a duration (at most 2562047h)", t.where(kp), s)
				}
				continue
			}
			t.checkDurations(x, kp)
		}
	case []any:
		for i, x := range v {
			t.checkDurations(x, ptr(p, strconv.Itoa(i)))
		}
	}
}

// durationRE is the schema's duration pattern.
var durationRE = regexp.MustCompile(`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$`)

func (t *tree) get(p string) (any, bool) { return lookup(t.val, splitPtr(p)...) }

func (t *tree) str(p string) (string, bool) {
	v, ok := t.get(p)
	s, isStr := v.(string)
	return s, ok && isStr
}

func (t *tree) has(p string) bool { _, ok := t.get(p); return ok }

func (t *tree) where(p string) string { return display(t.val, splitPtr(p)) }

// dur returns the duration at p (written or not), or def.
func (t *tree) dur(p string, def time.Duration) time.Duration {
	if s, ok := t.str(p); ok {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	return def
}

func (t *tree) isURLTarget() bool { return t.has("/target/url") && !t.has("/target/reference") }

// isImageTarget: a user's service image run by the docker environment; its
// processes are containers, so it needs no hooks.
func (t *tree) isImageTarget() bool { return t.has("/target/image") && !t.has("/target/reference") }

func (t *tree) checkTarget() {
	if raw, ok := t.str("/target/url"); ok && t.isURLTarget() && httpURL.MatchString(raw) && t.checkURL("/target/url", "target.url") {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			t.errorf(t.posOf("/target/url"), "target.url: %q is not an http:// or https:// URL with a host", raw)
		} else if remote, _ := t.get("/target/allow_remote"); remote != true && !addrgate.LoopbackName(u.Hostname()) {
			t.errorf(t.posOf("/target/url"), "target.url: host %q is not loopback; a scenario for a remote service says so with target.allow_remote: true (and runs only with --allow-remote)", u.Hostname())
		}
	}
	if t.has("/target/reference") && t.has("/target/allow_remote") {
		t.errorf(t.keyPos("/target/allow_remote"), "target.allow_remote: only used with target.url")
	}
	if t.has("/target/reference/retention") || t.has("/target/reference/retry_window") {
		ret := orDur(t.dur("/target/reference/retention", 0), 24*time.Hour) // 0 is the default
		win := orDur(t.dur("/target/reference/retry_window", 0), time.Hour)
		if ret < win {
			t.errorf(t.posOf("/target/reference/retention"), "target.reference.retention: %s is shorter than retry_window (%s); the reference refuses to start (the short-retention mutant shows why)", fmtDur(ret), fmtDur(win))
		}
	}
}

// checkConsumer checks a consumer scenario's blocks: a broker, a consumer
// and messages together, no target, an oracle of the user's.
func (t *tree) checkConsumer() {
	broker := t.has("/broker")
	if !broker {
		if !t.has("/target") {
			t.errorf(t.posOf(""), `the scenario: missing required key "target" (reference: {} for the bundled service, or url: for yours; broker:, consumer: and messages: for a consumer scenario)`)
		}
		for _, k := range []string{"consumer", "messages"} {
			if t.has("/" + k) {
				t.errorf(t.keyPos("/"+k), "%s: only in a consumer scenario, beside broker", k)
			}
		}
		return
	}
	if t.has("/target") {
		t.errorf(t.keyPos("/target"), "target: a consumer scenario has none: the consumer (consumer.command) is the system under test")
	}
	for _, k := range []string{"consumer", "messages"} {
		if !t.has("/" + k) {
			t.errorf(t.keyPos("/broker"), "%s: missing; a consumer scenario needs broker, consumer and messages", k)
		}
	}
	if o, _ := t.str("/effects/oracle"); o != "sql" && o != "http" {
		at := t.keyPos("/broker")
		if t.has("/effects/oracle") {
			at = t.posOf("/effects/oracle")
		}
		t.errorf(at, "effects.oracle: a consumer scenario reads its consumer's effects with sql or http")
	}
	c, okc := asInt(valueOr(t.get("/messages/count")))
	at, oka := asInt(valueOr(t.get("/messages/target")))
	if okc && oka && c > 0 {
		if at >= c {
			t.errorf(t.posOf("/messages/target"), "messages.target: %d, but messages are numbered 0 to %d (count %d)", at, c-1, c)
		}
	}
	if t.has("/messages/target") && !t.has("/messages/fault") {
		t.errorf(t.keyPos("/messages/target"), "messages.target: aims messages.fault, which is not set")
	}
}

// httpURL is the schema's pattern for target.url; the schema reports the rest.
var httpURL = regexp.MustCompile(`^https?://[^/?#]+`)

// checkFaults checks the fault list at p: parameters, when, hooks.
func (t *tree) checkFaults(p string) {
	list, _ := t.get(p)
	items, _ := list.([]any)
	for i := range items {
		fp := ptr(p, strconv.Itoa(i))
		kind, ok := t.str(fp + "/kind")
		if !ok {
			continue
		}
		fault, err := faults.New(kind)
		if err != nil {
			continue // the schema named the known kinds
		}
		t.checkClientFault(fp, kind, fault)
		pv, _ := t.get(fp + "/params")
		params, isMap := pv.(map[string]any)
		if pv != nil && !isMap {
			continue
		}
		pp := fp + "/params"
		problems := decodeParams(fault, params)
		for _, pr := range problems {
			kp := ptr(pp, pr.key)
			if pr.unknown {
				t.errorf(t.keyPos(kp), "%s", pr.text(kind, t.where(pp)))
			} else {
				t.errorf(t.posOf(kp), "%s: %s", t.where(kp), pr.msg)
			}
		}
		if len(problems) == 0 {
			if err := fault.Validate(); err != nil {
				at := t.keyPos(pp)
				if !t.has(pp) {
					at = t.posOf(fp)
				}
				t.wrapf(at, err, "%s: %v", t.where(pp), err)
			} else {
				if t.built == nil {
					t.built = map[string]faults.Fault{}
				}
				t.built[fp] = fault
			}
		}
		if t.has(fp+"/when/fraction") && t.has(fp+"/when/nth") {
			t.errorf(t.keyPos(fp+"/when/nth"), "%s: set fraction or nth, not both", t.where(fp+"/when"))
		}
		if t.isURLTarget() {
			var missing []string
			for _, h := range faults.HooksOf(fault) {
				if s, _ := t.str("/hooks/" + h); strings.TrimSpace(s) == "" {
					missing = append(missing, "hooks."+h)
				}
			}
			if len(missing) > 0 {
				t.errorf(t.posOf(fp), "%s: %s on an external target needs %s", t.where(fp), kind, strings.Join(missing, " and "))
			}
		}
	}
}

func (t *tree) checkContract() {
	profile, set := t.str("/contract/profile")
	if repeat, ok := t.str("/contract/repeat"); ok {
		if repeat != checkers.RepeatRefuse {
			t.errorf(t.posOf("/contract/repeat"), "contract.repeat: %q is not a repeat contract (refuse: every repeat of a key gets repeat_status; leave it out for a replay)", repeat)
			return
		}
		if !t.has("/contract/repeat_status") {
			t.errorf(t.keyPos("/contract/repeat"), "contract.repeat: refuse needs repeat_status, the status every repeat gets (412)")
		}
		if set && profile != "custom" {
			t.errorf(t.keyPos("/contract/profile"), "contract.profile: %s fixes its codes; a service that refuses every repeat is described by repeat: refuse alone (profile custom)", profile)
		}
		return
	}
	if t.has("/contract/repeat_status") {
		t.errorf(t.keyPos("/contract/repeat_status"), "contract.repeat_status: set only with repeat: refuse")
	}
	var codes []string
	for _, c := range []string{"missing_key", "reuse", "in_flight"} {
		if t.has("/contract/" + c) {
			codes = append(codes, c)
		}
	}
	if !set || profile == "custom" {
		if (profile == "custom" || len(codes) > 0) && (!t.has("/contract/reuse") || !t.has("/contract/in_flight")) {
			t.errorf(t.keyPos("/contract"), "contract: a custom profile needs reuse and in_flight (and missing_key, or 0 when requests without a key execute)")
		}
		return
	}
	p, err := checkers.ProfileByName(profile)
	if err != nil {
		return
	}
	for _, c := range codes {
		t.errorf(t.keyPos("/contract/"+c), "contract.%s: set only with profile: custom (%s fixes missing_key %d, reuse %d, in_flight %d)", c, profile, p.MissingKey, p.Reuse, p.InFlight)
	}
}

// oracleFields lists the effects fields each oracle uses.
var oracleFields = map[string][]string{
	"reference": nil,
	"none":      nil,
	"sql":       {"dsn", "query"},
	"http":      {"url", "items", "tenant", "key", "id", "headers", "next", "cursor", "state", "written_at", "resource"},
}

// oracleOptional are the fields of oracleFields an oracle may leave out.
var oracleOptional = []string{"headers", "next", "cursor", "state", "written_at", "resource"}

func (t *tree) checkEffects() {
	oracle, set := t.str("/effects/oracle")
	if !set {
		if t.isURLTarget() || t.isImageTarget() {
			at := t.keyPos("/effects")
			if !t.has("/effects") {
				at = t.keyPos("/target/url")
			}
			t.errorf(at, "effects.oracle: a url target needs an oracle to read its effects: sql, http or none")
			return
		}
		oracle = "reference"
	}
	need, known := oracleFields[oracle]
	if !known {
		return
	}
	if oracle == "reference" && (t.isURLTarget() || t.isImageTarget()) {
		t.errorf(t.posOf("/effects/oracle"), "effects.oracle: reference reads the bundled service's database; a url target needs sql, http or none")
	}
	perTenant := oracle == "http" && t.checkEffectPlaceholders()
	var missing []string
	for _, f := range need {
		// An image target's own database is the sql oracle's default; a
		// listing read per tenant is that tenant's.
		if slices.Contains(oracleOptional, f) || (f == "tenant" && perTenant) {
			continue
		}
		if s, _ := t.str("/effects/" + f); s == "" && (f != "dsn" || !t.isImageTarget() || !t.has("/target/database")) {
			missing = append(missing, f)
		}
	}
	if t.has("/effects/cursor") && !t.has("/effects/next") {
		t.errorf(t.keyPos("/effects/cursor"), "effects.cursor: names the query parameter the cursor of effects.next is sent back in; set effects.next")
	}
	if len(missing) > 0 {
		t.errorf(t.keyPos("/effects/oracle"), "effects: oracle %s needs %s", oracle, strings.Join(missing, ", "))
	}
	if dsn, ok := t.str("/effects/dsn"); ok && oracle == "sql" && dsn != "" {
		if err := addrgate.CheckDSNForm(dsn); err != nil {
			t.errorf(t.posOf("/effects/dsn"), "effects.dsn: %v", err)
		}
	}
	for _, f := range []string{"dsn", "query", "url", "items", "tenant", "key", "id", "headers", "next", "cursor", "state", "written_at", "resource"} {
		if t.has("/effects/"+f) && !slices.Contains(need, f) {
			why := ""
			if oracle == "sql" && slices.Contains([]string{"state", "written_at", "resource"}, f) {
				why = " (the sql oracle reads them as the query's columns of that name)"
			}
			t.errorf(t.keyPos("/effects/"+f), "effects.%s: not used by oracle %s%s", f, oracle, why)
		}
	}
}

// Placeholders are the body template's fields, filled per intent.
var placeholders = []string{"intent", "tenant", "key", "n", "sku", "qty", "amount", "uuid"}

var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

func (t *tree) checkEndpoint() {
	t.checkPlaceholders("/endpoint/body")
	t.checkPath()
	if s, ok := t.str("/endpoint/key_header"); ok && strings.EqualFold(s, "authorization") {
		t.errorf(t.posOf("/endpoint/key_header"), "endpoint.key_header: Authorization carries the tenant's token; choose another header")
	}
}

// checkTraffic checks one traffic mapping at p; base is where the values
// it does not set come from (the scenario's traffic, for a step).
func (t *tree) checkTraffic(p, base string) {
	t.checkBudget(p, base)
	pick := func(key string, def time.Duration) (time.Duration, string) {
		// "0" is the default, as everywhere.
		if t.has(p + "/" + key) {
			return orDur(t.dur(p+"/"+key, def), def), p + "/" + key
		}
		return orDur(t.dur(base+"/"+key, def), def), base + "/" + key
	}
	b, bp := pick("retry/base", 25*time.Millisecond)
	m, mp := pick("retry/max", 500*time.Millisecond)
	if b > m && (strings.HasPrefix(bp, p) || strings.HasPrefix(mp, p)) {
		at := bp
		if !t.has(at) {
			at = mp
		}
		t.errorf(t.posOf(at), "%s: retry.base (%s) is longer than retry.max (%s)", t.where(p), fmtDur(b), fmtDur(m))
	}
	for _, k := range []struct {
		key string
		def time.Duration
	}{{"timeout", 2 * time.Second}, {"deadline", 30 * time.Second}} {
		// Elsewhere 0 means the default; for a time limit it reads as
		// "none" or "at once", and a run silently given the default 2s
		// is not what was written.
		if kp := p + "/" + k.key; t.has(kp) {
			if s, ok := t.str(kp); ok {
				if d, err := time.ParseDuration(s); err == nil && d == 0 {
					t.errorf(t.posOf(kp), "%s.%s: %s is no time limit: write one above 0, or leave the key out for the default %s", t.where(p), k.key, s, fmtDur(k.def))
				}
			}
		}
	}
	to, tp := pick("timeout", 2*time.Second)
	dl, dp := pick("deadline", 30*time.Second)
	if to > dl && (strings.HasPrefix(tp, p) || strings.HasPrefix(dp, p)) {
		at := tp
		if !t.has(at) {
			at = dp
		}
		t.errorf(t.posOf(at), "%s: timeout (%s) is longer than deadline (%s)", t.where(p), fmtDur(to), fmtDur(dl))
	}
	tokens, _ := t.get("/endpoint/tokens")
	if tm, ok := tokens.(map[string]any); ok && len(tm) > 0 {
		if n, ok := asInt(valueOr(t.get(p + "/tenants"))); ok && n > int64(len(tm)) {
			t.errorf(t.posOf(p+"/tenants"), "%s.tenants: %d tenants but endpoint.tokens names %d; add tokens or lower tenants", t.where(p), n, len(tm))
		}
	}
}

func valueOr(v any, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

// invariantNames returns the scenario's invariants as written (all seven
// when none are listed).
func (t *tree) invariantNames() []string {
	list, _ := t.get("/invariants")
	items, _ := list.([]any)
	var names []string
	for _, it := range items {
		switch v := it.(type) {
		case string:
			names = append(names, v)
		case map[string]any:
			if s, ok := v["name"].(string); ok {
				names = append(names, s)
			}
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(checkers.Known(), n) })
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 && t.hasWebhook() {
		return slices.Clone(WebhookInvariants)
	}
	if len(names) == 0 && t.has("/client") {
		names = checkers.SuiteNames(checkers.SuiteClient)
	}
	if len(names) == 0 {
		return checkers.Names()
	}
	return names
}

func (t *tree) checkInvariants() {
	list, _ := t.get("/invariants")
	items, _ := list.([]any)
	seen := map[string]bool{}
	for i, it := range items {
		ip := ptr("/invariants", strconv.Itoa(i))
		name, _ := it.(string)
		if m, ok := it.(map[string]any); ok {
			name, _ = m["name"].(string)
			if t.has(ip+"/bound") && name != "eventually-decided" {
				t.errorf(t.keyPos(ip+"/bound"), "%s.bound: only eventually-decided takes a bound", t.where(ip))
			}
			if t.has(ip+"/headers") && name != "replay-identical" {
				t.errorf(t.keyPos(ip+"/headers"), "%s.headers: only replay-identical takes headers", t.where(ip))
			}
			if t.has(ip+"/states") && name != "forward-only" {
				t.errorf(t.keyPos(ip+"/states"), "%s.states: only forward-only takes states", t.where(ip))
			}
			t.checkStates(ip + "/states")
		}
		if name == "forward-only" && !t.has(ip+"/states") && !t.hasWebhook() {
			t.errorf(t.posOf(ip), "%s: forward-only needs the declared order of the states: {name: forward-only, states: [created, paid, refunded]}", t.where(ip))
		}
		if name == "" {
			continue
		}
		t.checkInvariantSide(ip, name)
		if seen[name] {
			t.errorf(t.posOf(ip), "%s: %q is listed twice", t.where(ip), name)
		}
		seen[name] = true
	}
}

// checkStates checks forward-only's declared order: at least two, each
// once.
func (t *tree) checkStates(sp string) {
	list, ok := t.get(sp)
	if !ok {
		return
	}
	items, _ := list.([]any)
	if len(items) < 2 {
		t.errorf(t.posOf(sp), "%s: declare at least two states, first to last", t.where(sp))
		return
	}
	seen := map[string]bool{}
	for i, it := range items {
		s, _ := it.(string)
		// The schema refuses an empty name.
		if s != "" && seen[s] {
			t.errorf(t.posOf(ptr(sp, strconv.Itoa(i))), "%s: %q is declared twice", t.where(ptr(sp, strconv.Itoa(i))), s)
		}
		seen[s] = true
	}
}

// checkWebhook checks a step's webhook: one kind of traffic per step, an
// endpoint for a user's target, each event once.
func (t *tree) checkWebhook(sp string) {
	wp := sp + "/webhook"
	if !t.has(wp) {
		return
	}
	for _, k := range []string{"callbacks", "resend", "traffic"} {
		if t.has(sp + "/" + k) {
			t.errorf(t.keyPos(sp+"/"+k), "%s.%s: a webhook step sends the provider's events, nothing else", t.where(sp), k)
		}
	}
	if !t.has("/target/reference") && !t.has(wp+"/path") {
		t.errorf(t.keyPos(wp), "%s: name the endpoint the provider posts to (webhook.path): only the reference's is known", t.where(wp))
	}
	if t.has("/broker") || t.has("/consumer") {
		t.errorf(t.keyPos(wp), "%s: a consumer scenario's messages come from its broker, not from a provider", t.where(wp))
	}
	list, _ := t.get(wp + "/events")
	items, _ := list.([]any)
	seen := map[string]bool{}
	for i, it := range items {
		if s, _ := it.(string); s != "" && seen[s] {
			t.errorf(t.posOf(ptr(wp+"/events", strconv.Itoa(i))), "%s: %q is listed twice: a payment's events are its states, in order", t.where(ptr(wp+"/events", strconv.Itoa(i))), s)
		} else {
			seen[s] = true
		}
	}
	if body, ok := t.str(wp + "/body"); ok {
		for _, m := range placeholderRE.FindAllStringSubmatch(body, -1) {
			if !slices.Contains(WebhookPlaceholders, m[1]) {
				t.errorf(t.posOf(wp+"/body"), "%s: unknown placeholder {{%s}} (known: %s)%s", t.where(wp+"/body"), m[1], strings.Join(WebhookPlaceholders, ", "), suggest.DidYouMean(m[1], WebhookPlaceholders))
			}
		}
	}
}

// hasWebhook says a step plays a payment provider: its events declare
// forward-only's states when the invariant does not.
func (t *tree) hasWebhook() bool {
	list, _ := t.get("/steps")
	items, _ := list.([]any)
	for i := range items {
		if t.has(ptr("/steps", strconv.Itoa(i), "webhook")) {
			return true
		}
	}
	return false
}

func (t *tree) checkSteps() {
	list, _ := t.get("/steps")
	items, _ := list.([]any)
	names := t.invariantNames()
	for i := range items {
		sp := ptr("/steps", strconv.Itoa(i))
		t.checkFaults(sp + "/faults")
		t.checkTraffic(sp+"/traffic", "/traffic")
		if exp, ok := t.str(sp + "/expect"); ok && exp != "clean" && !slices.Contains(names, exp) {
			what := "is not an invariant of this scenario"
			if !slices.Contains(checkers.Known(), exp) {
				what = "is not an invariant"
			}
			t.errorf(t.posOf(sp+"/expect"), "%s.expect: %q %s (expected clean or one of: %s)%s", t.where(sp), exp, what, strings.Join(names, ", "), suggest.DidYouMean(exp, names))
		}
		if t.has(sp+"/intents") && !t.has("/client") {
			t.errorf(t.keyPos(sp+"/intents"), "%s.intents: only in a client scenario (elsewhere traffic.intents)", t.where(sp))
		}
		t.checkWebhook(sp)
		if resend, _ := t.get(sp + "/resend"); resend == true && i == 0 {
			t.errorf(t.keyPos(sp+"/resend"), "%s.resend: the first step has no earlier step to resend", t.where(sp))
		}
	}
}

// fmtDur prints a duration the way people write it: 1h, not 1h0m0s.
func fmtDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

package harness

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// webhookStep is a webhook step resolved: the provider's events and how
// each is treated, drawn from the seed when the plan is made.
type webhookStep struct {
	w         scenarios.Webhook // defaults filled
	events    []string
	reference bool // events for the reference's orders so far
	secret    []byte
	// secretErr says the secret's variable is not set: the step cannot
	// be sent (its plan can still be shown).
	secretErr error
	// fault500 and faultDrop index the step's faults the treatments aim
	// at a first delivery: answered 500 after it executed, or never
	// answered (the provider times out).
	fault500, faultDrop int
}

// The webhook defaults (docs/scenarios.md).
const (
	webhookKeyHeader   = "Webhook-Id"
	webhookGap         = 40 * time.Millisecond // between a payment's events as delivered
	webhookForgedState = "refunded"
)

// webhookBodyReference is an event in the reference's callback shape;
// webhookBodyStripe one in a provider's own.
const (
	webhookBodyReference = `{"provider_tx":"{{event}}","order_id":"{{payment}}","status":"{{state}}","amount":{{amount}}}`
	webhookBodyStripe    = `{"id":"{{event}}","type":"{{type}}","created":{{created}},"data":{"object":{"id":"{{payment}}","amount":{{amount}},"status":"{{state}}"}}}`
)

func rateOr(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

// newWebhookStep fills a webhook's defaults and reads its secret from the
// environment; the synthesized faults its treatments use are appended to
// the step's faults fs.
func newWebhookStep(s *scenarios.Scenario, w scenarios.Webhook, fs []builtFault, i, n int) (*webhookStep, []builtFault, error) {
	ws := &webhookStep{reference: s.Target.Reference != nil, events: s.WebhookEvents(&w)}
	w.Path = cmp.Or(w.Path, "/v1/callbacks/payment")
	w.SecretEnv = cmp.Or(w.SecretEnv, scenarios.DefaultWebhookSecretEnv)
	w.SignatureHeader = cmp.Or(w.SignatureHeader, reference.SignatureHeader)
	if w.Body == "" {
		w.Body = webhookBodyStripe
		if ws.reference {
			w.Body = webhookBodyReference
		}
	}
	w.Payments = cmp.Or(w.Payments, 4)
	w.Attempts = cmp.Or(w.Attempts, 8)
	w.Within = cmp.Or(w.Within, 10*time.Second)
	w.Backoff = cmp.Or(w.Backoff, 50*time.Millisecond)
	w.MaxBackoff = cmp.Or(w.MaxBackoff, time.Second)
	w.Spread = cmp.Or(w.Spread, 300*time.Millisecond)
	w.LateBy = cmp.Or(w.LateBy, 300*time.Millisecond)
	secret := cmp.Or(w.Secret, os.Getenv(w.SecretEnv))
	switch {
	case secret != "":
	case ws.reference:
		secret = reference.DefaultProviderSecret
	default:
		ws.secretErr = fmt.Errorf("step %d/%d: webhook: the signing secret is read from $%s, which is not set (the endpoint's process reads the same variable)", i+1, n, w.SecretEnv)
	}
	ws.w, ws.secret = w, []byte(secret)
	extra, err := buildSpecs([]scenarios.FaultSpec{
		{Kind: "gateway-5xx", Params: map[string]any{"status": 500}},
		{Kind: "response-drop"},
	}, i, n)
	if err != nil {
		return nil, nil, err
	}
	ws.fault500, ws.faultDrop = len(fs), len(fs)+1
	return ws, append(fs, extra...), nil
}

// sign is the provider's signature of an attempt's body, made as it is
// sent; a forged event is signed with a secret that is not the provider's.
func (ws *webhookStep) sign(in *driver.Intent, body []byte) (string, string) {
	secret := ws.secret
	if in.Forged {
		secret = []byte("whsec_forged_" + in.ID)
	}
	return ws.w.SignatureHeader, reference.SignCallback(secret, body, time.Now())
}

// driverConfig is how a webhook step's deliveries are sent: as a provider
// does, every non-2xx retried with its backoff, bounded in count and time,
// the event id in the Webhook-Id header.
func (ws *webhookStep) driverConfig(base driver.Config) driver.Config {
	base.Model, base.KeyHeader, base.Sign = driver.Retry4xx, webhookKeyHeader, ws.sign
	base.Retry = driver.RetryPolicy{MaxAttempts: ws.w.Attempts, Base: ws.w.Backoff, Max: ws.w.MaxBackoff, Budget: ws.w.Within}
	base.DecisionBound = 0
	return base
}

// payment is a resource the provider sends events for.
type payment struct {
	id     string
	amount int64
	// intent, against the reference, is the intent that created the order.
	intent string
}

// webhookPayments are the payments of a step against a user's endpoint:
// made up by the provider, from the seed.
func webhookPayments(seed int64, n int, prefix string) []payment {
	// prefix holds the run's nonce against a user's endpoint: a payment
	// and an event of one run are never another run's.
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7061796d656e74))
	out := make([]payment, n)
	for i := range out {
		out[i] = payment{id: fmt.Sprintf("%spay_%d_%d", prefix, seed, i+1), amount: 100 * int64(1+rng.IntN(500))}
	}
	return out
}

// plan is the step's deliveries: every event of every payment, each
// treated as the seed draws. Each event is an intent (its id the intent
// and the key); a late copy is a second intent entry with the same id.
func (ws *webhookStep) plan(seed int64, pays []payment, prefix string) Plan {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x77656268))
	w := ws.w
	p := Plan{Seed: seed}
	var dup, late, reversed, got500, timedOut, forged []string
	for j, pay := range pays {
		start := time.Duration(rng.Int64N(int64(w.Spread) + 1))
		order := slices.Clone(ws.events)
		if rng.Float64() < rateOr(w.OutOfOrder, 0.5) && len(order) > 1 {
			slices.Reverse(order)
			reversed = append(reversed, pay.id)
		}
		for k, state := range order {
			id := fmt.Sprintf("%sevt_%d_%d_%s", prefix, seed, j+1, state)
			in := driver.Intent{ID: id, Tenant: providerTenant, Key: id, Method: "POST", Path: w.Path,
				Body: ws.body(id, state, pay, start), At: start + time.Duration(k)*webhookGap, Client: len(p.Intents)%8 + 1,
				Resource: pay.id, State: state}
			if rng.Float64() < rateOr(w.Duplicates, 0.3) {
				in.Clicks, in.Together = 2, true
				dup = append(dup, id)
			}
			switch r := rng.Float64(); {
			case r < rateOr(w.After500, 0.25):
				in.Faults = map[int]string{1: faultID("gateway-5xx", ws.fault500)}
				got500 = append(got500, id)
			case r < rateOr(w.After500, 0.25)+rateOr(w.Timeouts, 0.25):
				in.Faults = map[int]string{1: faultID("response-drop", ws.faultDrop)}
				timedOut = append(timedOut, id)
			}
			p.Intents = append(p.Intents, in)
			if rng.Float64() < rateOr(w.Late, 0.3) {
				again := in
				again.At, again.Clicks, again.Together, again.Faults = in.At+w.LateBy, 0, false, nil
				p.Intents = append(p.Intents, again)
				late = append(late, id)
			}
		}
	}
	nf := 1
	if w.Forged != nil {
		nf = *w.Forged
	}
	for f := 0; f < nf && len(pays) > 0; f++ {
		pay := pays[rng.IntN(len(pays))]
		id := fmt.Sprintf("%sevt_%d_forged_%d", prefix, seed, f+1)
		at := time.Duration(rng.Int64N(int64(w.Spread) + 1))
		// Not the provider's: no state it may ask for (forward-only), sent
		// once as an attacker would.
		p.Intents = append(p.Intents, driver.Intent{ID: id, Tenant: providerTenant, Key: id, Method: "POST", Path: w.Path,
			Body: ws.body(id, webhookForgedState, pay, at), At: at, Client: len(p.Intents)%8 + 1, Forged: true, Once: true})
		forged = append(forged, id+" ("+pay.id+")")
	}
	slices.SortStableFunc(p.Intents, func(a, b driver.Intent) int { return cmp.Compare(a.At, b.At) })
	list := func(what string, ids []string) string {
		if len(ids) == 0 {
			return what + ": none"
		}
		return what + ": " + strings.Join(ids, ", ")
	}
	p.Note = strings.Join([]string{
		fmt.Sprintf("a provider's events (%s) for %d payments, POST %s, signed in %s, each delivered until a 2xx (at most %d times within %s)",
			strings.Join(ws.events, ", "), len(pays), w.Path, w.SignatureHeader, w.Attempts, w.Within),
		list("twice at once", dup), list("again after its 2xx", late), list("events last first", reversed),
		list("first delivery executed and answered 500", got500), list("first delivery executed, never answered", timedOut),
		list("forged (a wrong secret, sent once)", forged),
	}, "; ")
	return p
}

// body renders an event.
func (ws *webhookStep) body(id, state string, pay payment, at time.Duration) []byte {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(at).Unix()
	r := strings.NewReplacer("{{event}}", id, "{{type}}", "payment."+state, "{{state}}", state, "{{payment}}", pay.id,
		"{{amount}}", strconv.FormatInt(ws.amount(state, pay), 10), "{{created}}", strconv.FormatInt(created, 10))
	return []byte(r.Replace(ws.w.Body))
}

// amount is what an event carries: the payment's amount, but the
// reference's fulfilment, which moves no money.
func (ws *webhookStep) amount(state string, pay payment) int64 {
	if ws.reference && state == "fulfilled" {
		return 0
	}
	return pay.amount
}

// stepPlan is the webhook step's plan: against a user's endpoint made up
// from the seed alone, against the reference for the orders the history
// at path shows created. The step's own faults are aimed as on any step.
func (ws *webhookStep) stepPlan(st *stepPlan, path string) (Plan, error) {
	pays := webhookPayments(st.seed, ws.w.Payments, st.keyPrefix+st.prefix)
	if ws.reference {
		var err error
		if pays, err = ordersSoFar(path, st.endpointPath, "id"); err != nil {
			return Plan{}, fmt.Errorf("webhook: %w", err)
		}
	}
	return withFaults(ws.plan(st.seed, pays, st.keyPrefix+st.prefix), st.faults[:ws.fault500]), nil
}

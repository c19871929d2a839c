package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// providerTenant is the tenant name callbacks are sent as: the payment
// provider, with its own token.
const providerTenant = "provider"

// callbackPlan builds the callbacks of a step from the orders the history so
// far shows were created: one provider transaction per order, delivered
// cb.Deliveries times within cb.Spread. Each delivery belongs to the intent
// that created the order, so a credit applied twice is that intent's
// duplicate effect.
func callbackPlan(historyPath string, endpointPath string, cb scenarios.Callbacks, seed int64) (Plan, error) {
	cb = callbackDefaults(cb)
	orders, err := ordersSoFar(historyPath, endpointPath, cb.IDField)
	if err != nil {
		return Plan{}, fmt.Errorf("callbacks: %w", err)
	}
	p := Plan{Seed: seed}
	for _, o := range orders {
		body, _ := json.Marshal(map[string]any{"provider_tx": "tx-" + o.id, "order_id": o.id, "status": cb.Status, "amount": o.amount})
		for d := 0; d < cb.Deliveries; d++ {
			at := time.Duration(0)
			if cb.Deliveries > 1 {
				at = cb.Spread * time.Duration(d) / time.Duration(cb.Deliveries-1)
			}
			p.Intents = append(p.Intents, driver.Intent{ID: o.intent, Tenant: providerTenant, Method: "POST",
				Path: cb.Path, Body: body, At: at, Client: len(p.Intents)%8 + 1})
		}
	}
	return p, nil
}

// ordersSoFar are the orders the history at historyPath shows created (a
// 2xx to a POST of endpointPath whose body names its idField), with the
// amount asked and the intent that created each, in order.
func ordersSoFar(historyPath, endpointPath, idField string) ([]payment, error) {
	f, err := os.Open(historyPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type sent struct {
		intent string
		amount int64
	}
	invokes := map[int64]sent{}
	seen := map[string]bool{}
	var out []payment
	rd := history.NewReader(f)
	var e history.Event
	for {
		err := rd.Next(&e)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch e.Type {
		case history.TypeInvoke:
			if e.Req != nil && e.Req.Path == endpointPath {
				var body struct {
					Amount int64 `json:"amount"`
				}
				_ = json.Unmarshal(e.Req.Body, &body)
				invokes[e.Op] = sent{intent: e.Intent, amount: body.Amount}
			}
		case history.TypeOK:
			s, ok := invokes[e.Op]
			if !ok || e.Resp.Status/100 != 2 {
				continue
			}
			var resp map[string]any
			if json.Unmarshal(e.Resp.Body, &resp) != nil {
				continue
			}
			id, _ := resp[idField].(string)
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, payment{id: id, amount: s.amount, intent: s.intent})
		}
	}
}

func callbackDefaults(cb scenarios.Callbacks) scenarios.Callbacks {
	if cb.Path == "" {
		cb.Path = "/v1/callbacks/payment"
	}
	if cb.Token == "" {
		cb.Token = "tok-provider"
	}
	if cb.Status == "" {
		cb.Status = "paid"
	}
	if cb.Deliveries <= 0 {
		cb.Deliveries = 3
	}
	if cb.Spread <= 0 {
		cb.Spread = 100 * time.Millisecond
	}
	if cb.IDField == "" {
		cb.IDField = "id"
	}
	return cb
}

// signCallback signs a callback as the reference's provider does, with
// the reference's default secret.
func signCallback(_ *driver.Intent, body []byte) (string, string) {
	return reference.SignatureHeader, reference.SignCallback([]byte(reference.DefaultProviderSecret), body, time.Now())
}

// withProvider adds the provider's token to a step's tokens.
func withProvider(tokens map[string]string, cb *scenarios.Callbacks) map[string]string {
	if cb == nil {
		return tokens
	}
	out := make(map[string]string, len(tokens)+1)
	for k, v := range tokens {
		out[k] = v
	}
	out[providerTenant] = callbackDefaults(*cb).Token
	return out
}

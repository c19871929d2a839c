package foreign

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
)

// countMade reads what the service really made for the run's keys (those
// of r.History) from its own listing at url, once it handles no request:
// a timed-out request's work may still be running when the run ends.
func countMade(ctx context.Context, url string, r *SeedResult) error {
	f, err := os.Open(r.History)
	if err != nil {
		return err
	}
	h, err := history.Load(f, history.LoadOptions{})
	f.Close()
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, a := range h.Attempts {
		keys[a.Tenant+"/"+a.Key] = true
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var l struct {
			Orders []struct {
				Tenant string `json:"tenant"`
				Key    string `json:"idempotency_key"`
			} `json:"orders"`
			Charging int `json:"charging"`
		}
		if err := getJSON(ctx, url, &l); err != nil {
			return err
		}
		if l.Charging == 0 {
			seen := map[string]bool{}
			for _, o := range l.Orders {
				if k := o.Tenant + "/" + o.Key; keys[k] {
					r.Made++
					seen[k] = true
				}
			}
			r.Keys = len(seen)
			return nil
		}
		// Polling is the only signal another team's service gives.
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: still handling %d requests: %w", url, l.Charging, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

var producedN = regexp.MustCompile(`produced (\d+) `)

// reportedDuplicates counts the duplicates exactly-once reported over the
// run's steps, each violation once: "produced 3 order effects" is 2.
func reportedDuplicates(o *harness.Outcome) int {
	if o == nil {
		return 0
	}
	seen := map[string]bool{}
	n := 0
	for _, st := range o.Steps {
		for _, res := range leaves(st.Result) {
			if res.Name != "exactly-once" {
				continue
			}
			for _, v := range res.Violations {
				m := producedN.FindStringSubmatch(v.Explanation)
				if m == nil || seen[v.Tenant+"/"+v.Key] {
					continue
				}
				seen[v.Tenant+"/"+v.Key] = true
				k, _ := strconv.Atoi(m[1])
				n += k - 1
			}
		}
	}
	return n
}

package scenarios_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestFaultSpec_Build(t *testing.T) {
	t.Parallel()
	// latency embeds its parameters in an unexported struct: Build must
	// still set them.
	f, err := scenarios.FaultSpec{Kind: "latency", Params: map[string]any{"latency": "300ms", "stream": "upstream"}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if l := f.(*faults.Latency); l.Latency != 300*time.Millisecond || l.Stream != "upstream" {
		t.Errorf("latency = %+v", l)
	}
	a, _ := scenarios.FaultSpec{Kind: "double-click", Params: map[string]any{"copies": uint64(3)}}.Build()
	b, _ := scenarios.FaultSpec{Kind: "double-click", Params: map[string]any{"copies": uint64(3)}}.Build()
	if a == b || a.(*faults.DoubleClick).Copies != 3 {
		t.Errorf("Build must return fresh, decoded values: %p %p %+v", a, b, a)
	}
	for name, c := range map[string]struct {
		spec scenarios.FaultSpec
		want error
	}{
		"unknown kind":  {scenarios.FaultSpec{Kind: "earthquake"}, faults.ErrUnknownKind},
		"unknown param": {scenarios.FaultSpec{Kind: "crash", Params: map[string]any{"pont": "now"}}, faults.ErrInvalidParams},
		"wrong type":    {scenarios.FaultSpec{Kind: "double-click", Params: map[string]any{"copies": "two"}}, faults.ErrInvalidParams},
		"bad duration":  {scenarios.FaultSpec{Kind: "rate-limit", Params: map[string]any{"retry_after": "soon"}}, faults.ErrInvalidParams},
		"validate":      {scenarios.FaultSpec{Kind: "gateway-5xx", Params: map[string]any{"status": 503}}, faults.ErrInvalidParams},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := c.spec.Build(); !errors.Is(err, c.want) {
				t.Errorf("Build() = %v, want %v", err, c.want)
			}
		})
	}
}

func TestParamNames(t *testing.T) {
	t.Parallel()
	if got := scenarios.ParamNames("latency"); !slices.Equal(got, []string{"jitter", "latency", "stream"}) {
		t.Errorf("ParamNames(latency) = %v", got)
	}
	if got := scenarios.ParamNames("earthquake"); got != nil {
		t.Errorf("ParamNames(unknown) = %v, want nil", got)
	}
}

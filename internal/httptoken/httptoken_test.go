package httptoken

import "testing"

func TestValid(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"POST": true, "Idempotency-Key": true, "x!#$%&'*+-.^_`|~9": true,
		"": false, "Bad Name": false, "a:b": false, "é": false, "a\tb": false, "(x)": false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

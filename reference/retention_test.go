package reference_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

func TestServe_RefusesRetentionShorterThanRetryWindow(t *testing.T) {
	t.Parallel()
	err := reference.Serve(context.Background(), reference.Config{DSN: "postgres://unused", Retention: time.Hour, MaxRetryWindow: 2 * time.Hour}, io.Discard)
	if !errors.Is(err, reference.ErrRetentionTooShort) {
		t.Fatalf("Serve = %v, want ErrRetentionTooShort", err)
	}
}

func TestServe_RejectsBadConfig(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cfg  reference.Config
		want error
	}{
		"unknown mutant":        {reference.Config{DSN: "x", Mutant: "nope"}, reference.ErrUnknownMutant},
		"no dsn":                {reference.Config{}, reference.ErrInvalidConfig},
		"replica-read, no dsn":  {reference.Config{DSN: "x", Mutant: "replica-read"}, reference.ErrReplicaRequired},
		"negative lease":        {reference.Config{DSN: "x", Lease: -time.Second}, reference.ErrInvalidConfig},
		"empty tenant of token": {reference.Config{DSN: "x", Tokens: map[string]string{"tok": ""}}, reference.ErrInvalidConfig},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := reference.Serve(context.Background(), tc.cfg, io.Discard); !errors.Is(err, tc.want) {
				t.Fatalf("Serve = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRetention_PurgesOnlyExpiredRecords(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{Retention: 2 * time.Hour, MaxRetryWindow: time.Hour})
	s.post(t, order{key: "old"})
	ageRecords(t, s.dsn, 3*time.Hour)
	s.post(t, order{key: "young"})
	r := postJSON(t, s.url+"/debug/purge", "", "")
	if r.status != http.StatusOK || jsonField(t, r.body, "purged") != "1" {
		t.Fatalf("purge: %v, want 1 purged", r)
	}
	if r := s.get(t, "/v1/idempotency/old", "tok-t1"); r.status != http.StatusNotFound {
		t.Fatalf("old record: %v, want purged", r)
	}
	if r := s.get(t, "/v1/idempotency/young", "tok-t1"); r.status != http.StatusOK {
		t.Fatalf("young record: %v, want kept", r)
	}
}

func TestRetention_PurgeLoopRuns(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	s := startService(t, reference.Config{DSN: dsn, Retention: time.Hour, MaxRetryWindow: time.Hour, PurgeInterval: 10 * time.Millisecond})
	s.post(t, order{key: "old"})
	ageRecords(t, dsn, 2*time.Hour)
	s.logs.waitFor(t, `"msg":"retention purge"`) // the loop's signal
	if r := s.get(t, "/v1/idempotency/old", "tok-t1"); r.status != http.StatusNotFound {
		t.Fatalf("old record: %v, want purged by the loop", r)
	}
}

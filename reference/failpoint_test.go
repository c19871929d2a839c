package reference

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFailpoints_LoopbackOnly(t *testing.T) {
	t.Parallel()
	teapot := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := newFailpoints(true, nil).loopbackOnly(teapot)
	// A container's private network is trusted only when allowed.
	inNet := newFailpoints(true, nil)
	inNet.allow = []netip.Prefix{netip.MustParsePrefix("172.18.0.0/16")}
	hNet := inNet.loopbackOnly(teapot)
	cases := map[string][2]int{ // remote → {default, with 172.18.0.0/16 allowed}
		"127.0.0.1:5000":  {http.StatusTeapot, http.StatusTeapot},
		"[::1]:5000":      {http.StatusTeapot, http.StatusTeapot},
		"10.0.0.7:5000":   {http.StatusForbidden, http.StatusForbidden},
		"192.0.2.1:80":    {http.StatusForbidden, http.StatusForbidden},
		"172.18.0.1:4000": {http.StatusForbidden, http.StatusTeapot},
		"172.19.0.1:4000": {http.StatusForbidden, http.StatusForbidden},
		"garbage":         {http.StatusForbidden, http.StatusForbidden},
	}
	for remote, want := range cases {
		t.Run(remote, func(t *testing.T) {
			for i, h := range []http.Handler{h, hNet} {
				req := httptest.NewRequest(http.MethodPost, "/debug/failpoints/after-claim", nil)
				req.RemoteAddr = remote
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				assert.Equal(t, want[i], rec.Code, "from %s (allowed networks: %v)", remote, i == 1)
			}
		})
	}
}

func TestFailpoints_DisabledIsInert(t *testing.T) {
	t.Parallel()
	f := newFailpoints(false, func(string) { t.Fatal("crashed while disabled") })
	_ = f.set(fpAfterClaim, fpCrash, 0)
	if err := f.hit(context.Background(), fpAfterClaim); err != nil {
		t.Fatal(err)
	}
}

func TestFailpoints_CountLimitsTriggers(t *testing.T) {
	t.Parallel()
	crashes := 0
	f := newFailpoints(true, func(string) { crashes++ })
	if err := f.set(fpAfterClaim, fpCrash, 2); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		_ = f.hit(context.Background(), fpAfterClaim)
	}
	if st, _ := f.state(fpAfterClaim); crashes != 2 || st.Hits != 4 || st.Action != fpOff {
		t.Fatalf("crashes %d, state %+v; want 2 crashes, 4 hits, off", crashes, st)
	}
}

func TestFailpoints_PauseReleasedByReleaseOrContext(t *testing.T) {
	t.Parallel()
	f := newFailpoints(true, selfKill)
	if err := f.set(fpBeforeClaim, fpPause, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	released := make(chan error, 1)
	go func() { released <- f.hit(ctx, fpBeforeClaim) }()
	if _, err := f.wait(ctx, fpBeforeClaim, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := f.releaseWaiters(fpBeforeClaim); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatalf("released hit returned %v", err)
	}
	hctx, hcancel := context.WithCancel(ctx)
	go func() { released <- f.hit(hctx, fpBeforeClaim) }()
	if _, err := f.wait(ctx, fpBeforeClaim, 2, 1); err != nil {
		t.Fatal(err)
	}
	hcancel()
	if err := <-released; err == nil {
		t.Fatal("a hit whose context ended returned nil")
	}
	if err := f.set("nope", fpPause, 0); err == nil {
		t.Fatal("unknown failpoint accepted")
	}
}

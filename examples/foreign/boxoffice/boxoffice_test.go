package boxoffice_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/examples/foreign/boxoffice"
)

// These tests pin each variant's behaviour by hand, without idemchaos.

func post(h http.Handler, key, body string) int {
	req := httptest.NewRequest(http.MethodPost, "/bookings", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("X-Customer", "t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

const order = `{"sku":"A-100","qty":1,"amount":100}`

// Every repeat of a key is refused with 412, whatever it carries; another
// customer's use of the key is its own.
func TestBoxoffice_RefusesEveryRepeat(t *testing.T) {
	h := boxoffice.New(boxoffice.Options{})
	if got := post(h, "k1", order); got != http.StatusCreated {
		t.Fatalf("first: %d", got)
	}
	for name, body := range map[string]string{"identical": order, "another body": `{"sku":"B-200","qty":1,"amount":100}`} {
		if got := post(h, "k1", body); got != http.StatusPreconditionFailed {
			t.Errorf("%s repeat: %d, want 412", name, got)
		}
	}
	if got := post(h, "", order); got != http.StatusBadRequest {
		t.Errorf("no key: %d, want 400", got)
	}
}

// Copies in flight together: one books, the others are refused — or, with
// the claim after the write, all book. The venue holds every booking
// until the copies that will book are all inside and the others answered.
func TestBoxoffice_CopiesTogether(t *testing.T) {
	for _, c := range []struct {
		claimAfterWrite bool
		booked          int
	}{{false, 1}, {true, 3}} {
		entered, release := make(chan struct{}, 3), make(chan struct{})
		h := boxoffice.New(boxoffice.Options{ClaimAfterWrite: c.claimAfterWrite, Venue: func() {
			entered <- struct{}{}
			<-release
		}})
		codes := make(chan int, 3)
		for range 3 {
			go func() { codes <- post(h, "k1", order) }()
		}
		for range c.booked {
			<-entered
		}
		var got []int
		for range 3 - c.booked {
			got = append(got, <-codes) // the refused ones answer while the booking is held
		}
		close(release)
		for range c.booked {
			got = append(got, <-codes)
		}
		n := 0
		for _, code := range got {
			if code == http.StatusCreated {
				n++
			}
		}
		if n != c.booked {
			t.Errorf("claim after write %v: %d of 3 copies booked (%v), want %d", c.claimAfterWrite, n, got, c.booked)
		}
	}
}

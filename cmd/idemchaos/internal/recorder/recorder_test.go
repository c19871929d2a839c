package recorder_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/recorder"
	"github.com/idemchaos/idemchaos/history"
)

// proxy starts a recorder in front of upstream and returns its URL and a
// function that flushes and returns the events it wrote.
func proxy(t *testing.T, upstream string, opts recorder.Options) (string, func() []history.Event) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstream = u
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	rec, err := recorder.New(w, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return srv.URL, func() []history.Event {
		if err := rec.Flush(); err != nil {
			t.Fatal(err)
		}
		// The file must load as a history, as check loads it.
		if _, err := history.Load(bytes.NewReader(buf.Bytes()), history.LoadOptions{}); err != nil {
			t.Fatalf("the recording does not load: %v\n%s", err, buf.String())
		}
		var out []history.Event
		rd := history.NewReader(bytes.NewReader(buf.Bytes()))
		for {
			var e history.Event
			if err := rd.Next(&e); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
}

func post(t *testing.T, base, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRecord_OKForwardsAndRecords(t *testing.T) {
	var seen http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=secret")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"o-1","echo":`+string(b)+`}`)
	}))
	defer up.Close()
	base, events := proxy(t, up.URL+"/api", recorder.Options{Redact: []string{"Authorization", "Set-Cookie", "card_number"}})
	status, body := post(t, base, "/v1/orders?x=1", `{"sku":"A","card_number":"4111"}`,
		map[string]string{"Authorization": "Bearer tok-a", "Idempotency-Key": "k-1", "Content-Type": "application/json"})
	if status != 201 || body != `{"id":"o-1","echo":{"sku":"A","card_number":"4111"}}` {
		t.Fatalf("client got %d %s: the client must see the upstream's real answer", status, body)
	}
	if seen.Get("Authorization") != "Bearer tok-a" || seen.Get("Idempotency-Key") != "k-1" {
		t.Errorf("upstream saw %v: credentials and key must reach it unredacted", seen)
	}
	ev := events()
	if len(ev) != 3 || ev[0].Type != history.TypeMeta || ev[1].Type != history.TypeInvoke || ev[2].Type != history.TypeOK {
		t.Fatalf("events %+v, want meta, invoke, ok", ev)
	}
	inv, ok := ev[1], ev[2]
	if inv.Intent != "" || inv.Key != "k-1" || inv.Tenant != recorder.DefaultTenant(&http.Request{Header: http.Header{"Authorization": {"Bearer tok-a"}}}, nil) || !strings.HasPrefix(inv.Tenant, "auth-") {
		t.Errorf("invoke intent %q key %q tenant %q", inv.Intent, inv.Key, inv.Tenant)
	}
	if inv.Req.Path != "/v1/orders" || inv.Req.Method != "POST" {
		t.Errorf("req %s %s", inv.Req.Method, inv.Req.Path)
	}
	if v, _ := inv.Req.Headers.Get("Authorization"); v != recorder.Redacted {
		t.Errorf("Authorization recorded as %q", v)
	}
	if string(inv.Req.Body) != `{"card_number":"[redacted]","sku":"A"}` {
		t.Errorf("request body recorded as %s", inv.Req.Body)
	}
	if v, _ := ok.Resp.Headers.Get("Set-Cookie"); v != recorder.Redacted || ok.Resp.Status != 201 {
		t.Errorf("response %d, Set-Cookie %q", ok.Resp.Status, v)
	}
	if !(ok.NS > inv.NS && inv.NS > 0) {
		t.Errorf("ns not monotonic: invoke %d, ok %d", inv.NS, ok.NS)
	}
	// A body field is redacted in responses too (the echo here).
	if !strings.Contains(string(ok.Resp.Body), `"card_number":"[redacted]"`) {
		t.Errorf("response body %s: card_number not redacted", ok.Resp.Body)
	}
}

// Nothing listens upstream: the request provably never reached it (fail).
func TestRecord_RefusedIsFail(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base, events := proxy(t, "http://"+addr, recorder.Options{})
	status, _ := post(t, base, "/v1/orders", `{}`, map[string]string{"Idempotency-Key": "k"})
	if status != http.StatusBadGateway {
		t.Errorf("client got %d, want 502", status)
	}
	ev := events()
	if len(ev) != 3 || ev[2].Type != history.TypeFail || ev[2].Error == "" {
		t.Fatalf("events %+v, want invoke then fail with an error", ev)
	}
}

// The upstream read the request and hung up without answering: it may have
// executed (info).
func TestRecord_ResetAfterSendIsInfo(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer up.Close()
	base, events := proxy(t, up.URL, recorder.Options{})
	status, _ := post(t, base, "/v1/orders", `{}`, map[string]string{"Idempotency-Key": "k"})
	if status != http.StatusBadGateway {
		t.Errorf("client got %d, want 502", status)
	}
	ev := events()
	if len(ev) != 3 || ev[2].Type != history.TypeInfo {
		t.Fatalf("events %+v, want invoke then info", ev)
	}
}

func TestRecord_TimeoutIsInfo(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer up.Close()
	defer close(release)
	base, events := proxy(t, up.URL, recorder.Options{Timeout: 50 * time.Millisecond})
	status, _ := post(t, base, "/v1/orders", `{}`, nil)
	if status != http.StatusGatewayTimeout {
		t.Errorf("client got %d, want 504", status)
	}
	ev := events()
	if len(ev) != 3 || ev[2].Type != history.TypeInfo || !strings.HasPrefix(ev[2].Error, "timeout") {
		t.Fatalf("events %+v, want invoke then info (timeout)", ev)
	}
}

func TestRecord_FormBodyRedactionAndTenantFunc(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer up.Close()
	base, events := proxy(t, up.URL, recorder.Options{Redact: []string{"number"}, KeyHeader: "X-Key",
		Contract: &history.Contract{Profile: "custom", MissingKey: 0, Reuse: 409, InFlight: 425},
		Tenant:   func(r *http.Request, _ []byte) string { return r.Header.Get("X-Account") }})
	post(t, base, "/c", "amount=100&card[number]=4242", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Account": "acct_9", "X-Key": "k9"})
	post(t, base, "/c", "amount=100", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	ev := events()
	if len(ev) != 5 {
		t.Fatalf("%d events", len(ev))
	}
	if c := ev[0].Contract; c == nil || c.Profile != "custom" || c.Reuse != 409 || c.InFlight != 425 {
		t.Errorf("meta contract %+v", c)
	}
	if ev[1].Tenant != "acct_9" || ev[1].Key != "k9" || string(ev[1].Req.Body) != "amount=100&card%5Bnumber%5D=%5Bredacted%5D" {
		t.Errorf("first invoke tenant %q key %q body %s", ev[1].Tenant, ev[1].Key, ev[1].Req.Body)
	}
	if ev[3].Key != "" || string(ev[3].Req.Body) != "amount=100" {
		t.Errorf("second invoke key %q body %s: an unredacted body is kept byte for byte", ev[3].Key, ev[3].Req.Body)
	}
}

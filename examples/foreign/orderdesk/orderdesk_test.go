package orderdesk_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// These tests pin the service's behaviour by hand, without idemchaos: the
// service is the Python program itself, on a real SQLite file.

// start runs orderdesk.py on a free port with a fresh database and returns
// its base URL.
func start(t *testing.T, flags ...string) string {
	t.Helper()
	args := append([]string{"orderdesk.py", "--db", filepath.Join(t.TempDir(), "orders.sqlite"), "--addr", "127.0.0.1:0"}, flags...)
	cmd := exec.Command("python3", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start python3 (test.sh installs it): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("orderdesk did not start: %q %v\n%s", line, err, stderr.String())
	}
	return url
}

type reply struct {
	status   int
	body     string
	replayed bool
}

func post(t *testing.T, base, customer, key, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
	req.Header.Set("X-Customer", customer)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header.Get("Idempotent-Replayed") == "true"}
}

type page struct {
	Orders []struct {
		ID  int    `json:"id"`
		Key string `json:"idempotency_key"`
	} `json:"orders"`
	Next *string `json:"next_cursor"`
}

// orders reads every page of a customer's listing.
func orders(t *testing.T, base, customer string) map[string]int {
	t.Helper()
	out := map[string]int{}
	cursor := ""
	for range 100 {
		req, _ := http.NewRequest(http.MethodGet, base+"/orders?limit=3&cursor="+cursor, nil)
		req.Header.Set("X-Customer", customer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p page
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Orders {
			out[o.Key]++
		}
		if p.Next == nil {
			return out
		}
		cursor = *p.Next
	}
	t.Fatal("the listing never ended")
	return nil
}

const order = `{"sku":"A-100","qty":1,"amount":100}`

// together sends n copies of one request at once and returns the answers.
func together(t *testing.T, base, customer, key string, n int) []reply {
	var wg sync.WaitGroup
	out := make([]reply, n)
	for i := range out {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = post(t, base, customer, key, order) }()
	}
	wg.Wait()
	return out
}

func TestOrderdesk_Correct(t *testing.T) {
	t.Parallel()
	base := start(t)
	first := post(t, base, "c1", "k1", order)
	if first.status != http.StatusCreated || first.replayed {
		t.Fatalf("first: %+v", first)
	}
	if got := post(t, base, "c1", "k1", `{"amount":100, "qty":1, "sku":"A-100"}`); got.status != first.status || got.body != first.body || !got.replayed {
		t.Errorf("reordered retry: %+v, want the first answer replayed", got)
	}
	if got := post(t, base, "c1", "k1", `{"sku":"B-200","qty":1,"amount":100}`); got.status != http.StatusUnprocessableEntity {
		t.Errorf("reuse: %+v, want 422", got)
	}
	if got := post(t, base, "c1", "", order); got.status != http.StatusBadRequest {
		t.Errorf("no key: %+v, want 400", got)
	}
	if got := post(t, base, "c2", "k1", order); got.status != http.StatusCreated || got.replayed || got.body == first.body {
		t.Errorf("another customer's k1: %+v, want its own order", got)
	}
	for i := range 5 {
		key := fmt.Sprintf("burst-%d", i)
		answers := together(t, base, "c1", key, 6)
		for _, a := range answers[1:] {
			if a.status != answers[0].status || a.body != answers[0].body {
				t.Errorf("%s: copies answered %+v and %+v", key, answers[0], a)
			}
		}
	}
	got := orders(t, base, "c1")
	for key, n := range got {
		if n != 1 {
			t.Errorf("c1 %s: %d orders, want 1", key, n)
		}
	}
	if len(got) != 6 {
		t.Errorf("c1 has orders for %d keys, want 6 (k1 and 5 bursts): %v", len(got), got)
	}
	if c2 := orders(t, base, "c2"); len(c2) != 1 {
		t.Errorf("c2's listing: %v, want its one order", c2)
	}
}

// The first release's claim: copies that arrive together all miss the key
// and all write an order.
func TestOrderdesk_CheckThenInsertDuplicates(t *testing.T) {
	t.Parallel()
	base := start(t, "--check-then-insert")
	if first, again := post(t, base, "c1", "k1", order), post(t, base, "c1", "k1", order); !again.replayed || again.body != first.body {
		t.Fatalf("a sequential retry is still replayed: %+v, %+v", first, again)
	}
	for i := range 10 {
		together(t, base, "c1", fmt.Sprintf("burst-%d", i), 6)
	}
	dup := 0
	for _, n := range orders(t, base, "c1") {
		if n > 1 {
			dup++
		}
	}
	if dup == 0 {
		t.Fatal("10 bursts of 6 copies made no duplicate order")
	}
	t.Logf("%d of 10 bursts made more than one order", dup)
}

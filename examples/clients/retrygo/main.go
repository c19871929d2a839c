// Command retrygo creates one order inside avast/retry-go's retry.Do, the
// way the library's examples read: the closure builds the request and does
// everything an attempt needs — including minting the Idempotency-Key. So
// every retry carries a new key ("加了幂等键仍然重复"), and since the
// closure returns an error for every non-2xx answer, a 422 or a 403 is
// retried too. retry-go's default delay (backoff plus random jitter) is
// kept; Retry-After is never read.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/avast/retry-go/v4"
)

func main() {
	body := []byte(os.Getenv("IDEMCHAOS_BODY"))
	if len(body) == 0 {
		body, _ = io.ReadAll(os.Stdin)
	}
	path := os.Getenv("IDEMCHAOS_PATH")
	if path == "" {
		path = "/v1/orders"
	}
	url := os.Getenv("IDEMCHAOS_URL") + path
	httpClient := &http.Client{Timeout: 2 * time.Second}

	var orderID string
	err := retry.Do(
		func() error {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return retry.Unrecoverable(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+os.Getenv("IDEMCHAOS_TOKEN"))
			req.Header.Set("Idempotency-Key", newKey())
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode >= 300 {
				return fmt.Errorf("create order: %s: %s", resp.Status, data)
			}
			var order struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(data, &order); err != nil {
				return err
			}
			orderID = order.ID
			return nil
		},
		retry.Attempts(4),
		retry.Delay(50*time.Millisecond),
		retry.LastErrorOnly(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(orderID)
}

func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

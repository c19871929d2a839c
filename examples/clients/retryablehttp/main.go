// Command retryablehttp creates one order with hashicorp/go-retryablehttp,
// written the way its README shows: a retryablehttp.Client with its
// default retry policy and backoff (shortened waits, as teams set them for
// an interactive path), the request built once with its Idempotency-Key,
// so every retry re-sends the same request.
//
// Its defaults decide its ground truth (see ../README.md): the key is
// stable, 4xx are not retried, 429/503 Retry-After are honoured, but the
// backoff has no jitter, and when every attempt fails the call returns an
// error ("giving up after N attempts") that this command, like most
// callers, reports as a failure — even after a 502 that followed
// execution.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-retryablehttp"
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

	client := retryablehttp.NewClient()
	client.RetryMax = 4
	client.RetryWaitMin = 100 * time.Millisecond
	client.RetryWaitMax = 2 * time.Second
	client.HTTPClient.Timeout = 2 * time.Second
	client.Logger = nil

	req, err := retryablehttp.NewRequest("POST", os.Getenv("IDEMCHAOS_URL")+path, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var k [16]byte
	_, _ = rand.Read(k[:])
	req.Header.Set("Idempotency-Key", hex.EncodeToString(k[:]))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("IDEMCHAOS_TOKEN"))
	req.Header.Set("Content-Type", "application/json")

	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "create order:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(os.Stderr, "create order: %s: %s\n", resp.Status, data)
		os.Exit(1)
	}
	var order struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &order)
	fmt.Println(order.ID)
}

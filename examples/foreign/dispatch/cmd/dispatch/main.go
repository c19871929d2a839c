// Command dispatch runs the dispatch consumer: its stream and group from
// IDEMCHAOS_REDIS_URL, IDEMCHAOS_REDIS_STREAM and IDEMCHAOS_REDIS_GROUP,
// the claim idle time from IDEMCHAOS_REDIS_ACK_WAIT_MS and the dead-letter
// bound from IDEMCHAOS_REDIS_MAX_DELIVER (as idemchaos starts it), its
// database from DATABASE_URL, a flaw with -flaw. Each process is its own
// member of the group, named after the host and its pid, as a deployment's
// instances are. SIGTERM stops it after the entries in hand.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign/dispatch"
)

func main() {
	flaw := flag.String("flaw", "", "ack-first, no-dedupe or no-claim (\"\": the correct consumer)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	host, _ := os.Hostname()
	idleMS, _ := strconv.Atoi(os.Getenv("IDEMCHAOS_REDIS_ACK_WAIT_MS"))
	maxDeliver, _ := strconv.Atoi(os.Getenv("IDEMCHAOS_REDIS_MAX_DELIVER"))
	err := dispatch.Run(ctx, dispatch.Options{
		RedisURL: os.Getenv("IDEMCHAOS_REDIS_URL"), Stream: os.Getenv("IDEMCHAOS_REDIS_STREAM"), Group: os.Getenv("IDEMCHAOS_REDIS_GROUP"),
		Consumer:  fmt.Sprintf("%s-%d", host, os.Getpid()),
		ClaimIdle: time.Duration(idleMS) * time.Millisecond, MaxDeliveries: maxDeliver,
		DatabaseURL: os.Getenv("DATABASE_URL"), Flaw: *flaw,
	})
	if err != nil {
		log.Fatal(err)
	}
}

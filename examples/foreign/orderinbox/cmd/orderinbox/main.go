// Command orderinbox runs the orderinbox consumer: its broker from
// IDEMCHAOS_NATS_URL, IDEMCHAOS_NATS_STREAM and IDEMCHAOS_NATS_CONSUMER (as
// idemchaos starts it), its database from DATABASE_URL, a flaw with -flaw.
// SIGTERM stops it after the message in hand.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/idemchaos/idemchaos/examples/foreign/orderinbox"
)

func main() {
	flaw := flag.String("flaw", "", "ack-first, mark-after-ack or no-dedupe (\"\": the correct consumer)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := orderinbox.Run(ctx, orderinbox.Options{
		NATSURL: os.Getenv("IDEMCHAOS_NATS_URL"), Stream: os.Getenv("IDEMCHAOS_NATS_STREAM"),
		Consumer: os.Getenv("IDEMCHAOS_NATS_CONSUMER"), DatabaseURL: os.Getenv("DATABASE_URL"), Flaw: *flaw,
	})
	if err != nil {
		log.Fatal(err)
	}
}

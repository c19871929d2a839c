#!/usr/bin/env python3
"""parcelpost: the parcel post team's shipping worker. It takes "order placed"
messages from a RabbitMQ queue and books one parcel per order in
Postgres, then announces it ("parcel.booked" on the parcelpost.events
exchange, with publisher confirms). Debian's python3-pika (a blocking
connection, basic_qos, a basic_consume callback) and python3-psycopg2.

    {"order": "order-1-2", "amount": 4127}

    -> INSERT INTO parcels (order_id, amount) ...

The correct worker books the parcel and records the order id in
handled_orders in one transaction, commits, announces it, and only then
acknowledges the message: a crash before the commit leaves the message
unacknowledged (RabbitMQ delivers it again when the connection dies, and
the parcel is booked then), a crash after it leaves the id recorded (the
redelivery is acknowledged and nothing else).

Each --flaw is one a team could ship:

  auto-ack        consumes with auto_ack=True, as RabbitMQ's first Python
                  tutorial does: RabbitMQ counts a message acknowledged as it
                  sends it, so a worker that dies before its commit has
                  lost the order.
  mark-after-ack  looks the id up first, books the parcel, acknowledges,
                  announces it, and records the id last ("handled" means
                  announced too). A crash after the booking and before the
                  ack reached the broker redelivers a message whose id was
                  never recorded: a second parcel.
  no-dedupe       books every delivery it gets.

Run: python3 parcelpost.py [--flaw F (or PARCELPOST_FLAW=F)] [--prefetch N]
with IDEMCHAOS_AMQP_URL and IDEMCHAOS_AMQP_QUEUE (as idemchaos starts it)
and DATABASE_URL in the environment. SIGTERM stops it after the message in
hand.
"""

import argparse
import json
import logging
import os
import signal
import sys

import pika
import psycopg2

SCHEMA = """
CREATE TABLE IF NOT EXISTS parcels (
    id        bigserial PRIMARY KEY,
    order_id  text NOT NULL,
    amount    integer NOT NULL,
    booked_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS handled_orders (
    order_id   text PRIMARY KEY,
    handled_at timestamptz NOT NULL DEFAULT now()
);
"""

EVENTS = "parcelpost.events"
FLAWS = ("auto-ack", "mark-after-ack", "no-dedupe")

log = logging.getLogger("parcelpost")


class Worker:
    def __init__(self, db, channel, flaw):
        self.db = db
        self.channel = channel
        self.flaw = flaw

    def on_message(self, channel, method, properties, body):
        try:
            order = json.loads(body)
            order_id, amount = order["order"], int(order["amount"])
        except (ValueError, KeyError, TypeError):
            log.warning("malformed message %r: rejected", body[:100])
            if self.flaw != "auto-ack":
                channel.basic_reject(method.delivery_tag, requeue=False)
            return
        if self.flaw == "auto-ack":
            self.book(order_id, amount, dedupe=True)
            self.announce(order_id)
        elif self.flaw == "mark-after-ack":
            if self.handled(order_id):
                channel.basic_ack(method.delivery_tag)
                return
            self.book(order_id, amount, dedupe=False)
            channel.basic_ack(method.delivery_tag)
            self.announce(order_id)
            self.mark(order_id)
        elif self.flaw == "no-dedupe":
            self.book(order_id, amount, dedupe=False)
            self.announce(order_id)
            channel.basic_ack(method.delivery_tag)
        else:
            if self.book(order_id, amount, dedupe=True):
                self.announce(order_id)
            channel.basic_ack(method.delivery_tag)

    def book(self, order_id, amount, dedupe):
        """Books the parcel; with dedupe, records the order id in the same
        transaction and books nothing if it was recorded already."""
        with self.db:  # one transaction: commit on success, rollback on error
            with self.db.cursor() as cur:
                if dedupe:
                    cur.execute("INSERT INTO handled_orders (order_id) VALUES (%s) ON CONFLICT DO NOTHING", (order_id,))
                    if cur.rowcount == 0:
                        log.info("order %s already booked: redelivery", order_id)
                        return False
                cur.execute("INSERT INTO parcels (order_id, amount) VALUES (%s, %s)", (order_id, amount))
        return True

    def handled(self, order_id):
        with self.db:
            with self.db.cursor() as cur:
                cur.execute("SELECT 1 FROM handled_orders WHERE order_id = %s", (order_id,))
                return cur.fetchone() is not None

    def mark(self, order_id):
        with self.db:
            with self.db.cursor() as cur:
                cur.execute("INSERT INTO handled_orders (order_id) VALUES (%s) ON CONFLICT DO NOTHING", (order_id,))

    def announce(self, order_id):
        # The channel is in confirm mode: this returns once the broker has
        # the event.
        self.channel.basic_publish(EVENTS, "parcel.booked", json.dumps({"order": order_id}).encode(),
                                   pika.BasicProperties(content_type="application/json", delivery_mode=2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flaw", default=os.environ.get("PARCELPOST_FLAW") or None,
                        help="one of %s (default: $PARCELPOST_FLAW)" % ", ".join(FLAWS))
    parser.add_argument("--prefetch", type=int, default=10)
    args = parser.parse_args()
    if args.flaw is not None and args.flaw not in FLAWS:
        parser.error("--flaw: %r is none of %s" % (args.flaw, ", ".join(FLAWS)))
    logging.basicConfig(level=logging.INFO, format="parcelpost[%(process)d] %(message)s", stream=sys.stderr)

    db = psycopg2.connect(os.environ["DATABASE_URL"])
    with db:
        with db.cursor() as cur:
            cur.execute(SCHEMA)

    connection = pika.BlockingConnection(pika.URLParameters(os.environ["IDEMCHAOS_AMQP_URL"]))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.exchange_declare(EVENTS, exchange_type="topic", durable=True)
    channel.basic_qos(prefetch_count=args.prefetch)
    worker = Worker(db, channel, args.flaw)
    channel.basic_consume(os.environ["IDEMCHAOS_AMQP_QUEUE"], worker.on_message, auto_ack=args.flaw == "auto-ack")

    # SIGTERM: finish the message in hand, then stop consuming.
    def stop(signum, frame):
        connection.add_callback_threadsafe(channel.stop_consuming)

    signal.signal(signal.SIGTERM, stop)
    log.info("consuming %s (flaw %s)", os.environ["IDEMCHAOS_AMQP_QUEUE"], args.flaw or "none")
    channel.start_consuming()
    connection.close()  # what was prefetched and not acknowledged goes back to the queue
    db.close()


if __name__ == "__main__":
    main()

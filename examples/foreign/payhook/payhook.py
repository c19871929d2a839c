#!/usr/bin/env python3
"""payhook: the payments team's receiver for the payment provider's webhooks.

The provider POSTs an event to /webhooks/payments whenever a payment changes:

    {"id": "evt_...", "type": "payment.paid", "created": 1767225600,
     "data": {"object": {"id": "pay_...", "amount": 4200, "status": "paid"}}}

signed in the Webhook-Signature header (t=<unix>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>"> under the shared secret, $WEBHOOK_SECRET). The provider
retries until it gets a 2xx, so we see the same event more than once, and
events for one payment can come in any order.

What we keep (SQLite, one file):

    webhook_events  every event we accepted, once (event id unique)
    payments        each payment's status, created -> paid -> refunded,
                    and when we last changed it
    ledger          money in (paid) and out (refunded), one row per event

Run:  WEBHOOK_SECRET=... python3 payhook.py --db payhook.sqlite --addr 127.0.0.1:8090

The flags below switch off one of our safeguards each. They exist so that
our own test suite (and idemchaos) can show what each safeguard is for; never
run them in production:

    --no-signature-check   accept any event, signed or not
    --no-dedupe            do not look events up by id: a redelivery is new
    --blind-apply          write whatever status an event carries, even one
                           behind the payment's current status
"""

import argparse
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The lifecycle the provider documents. A status only moves to the right;
# an event may skip one (paid arrives before created).
STATUS_ORDER = ["created", "paid", "refunded"]
SIGNATURE_HEADER = "Webhook-Signature"
TOLERANCE_SECONDS = 300  # the provider's own recommendation

SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id    TEXT NOT NULL,
    type        TEXT NOT NULL,
    payment_id  TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS payments (
    id         TEXT PRIMARY KEY,
    amount     INTEGER NOT NULL,
    status     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    payment_id TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    amount     INTEGER NOT NULL
);
"""
# Redeliveries are normal: the event id is the provider's idempotency key.
DEDUPE_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_event_id ON webhook_events (event_id)"


def now_iso():
    return datetime.now(timezone.utc).isoformat()


def rank(status):
    return STATUS_ORDER.index(status)


class BadEvent(Exception):
    pass


def verify_signature(secret, header, body):
    """The provider's scheme: t=<unix>,v1=<hmac>[,v1=<hmac>...]."""
    if not header:
        raise BadEvent("missing " + SIGNATURE_HEADER)
    parts = {}
    signatures = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "v1":
            signatures.append(value)
        else:
            parts[key] = value
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        raise BadEvent("malformed " + SIGNATURE_HEADER)
    signed = str(timestamp).encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise BadEvent("signature mismatch")
    if abs(time.time() - timestamp) > TOLERANCE_SECONDS:
        raise BadEvent("timestamp outside the tolerance")


def parse_event(body):
    try:
        event = json.loads(body)
        payment = event["data"]["object"]
        kind = event["type"]
        status = kind.split(".", 1)[1]
        return event["id"], kind, payment["id"], int(payment.get("amount", 0)), status
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise BadEvent("not a payment event")


class Store:
    def __init__(self, path, dedupe, blind):
        self.path = path
        self.dedupe = dedupe
        self.blind = blind
        self.local = threading.local()
        db = self.connect()
        db.executescript(SCHEMA)
        if dedupe:
            db.execute(DEDUPE_INDEX)

    def connect(self):
        db = getattr(self.local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            self.local.db = db
        return db

    def apply(self, event_id, kind, payment_id, amount, status):
        """Returns what happened, for the response and our logs."""
        if status not in STATUS_ORDER:
            return "ignored"  # an event type we do not act on
        db = self.connect()
        # One writer at a time: the lookups below must not race.
        db.execute("BEGIN IMMEDIATE")
        try:
            if self.dedupe:
                cur = db.execute(
                    "INSERT OR IGNORE INTO webhook_events (event_id, type, payment_id, received_at) VALUES (?, ?, ?, ?)",
                    (event_id, kind, payment_id, now_iso()))
                if cur.rowcount == 0:
                    db.execute("COMMIT")
                    return "duplicate"
            else:
                db.execute(
                    "INSERT INTO webhook_events (event_id, type, payment_id, received_at) VALUES (?, ?, ?, ?)",
                    (event_id, kind, payment_id, now_iso()))
            row = db.execute("SELECT status FROM payments WHERE id = ?", (payment_id,)).fetchone()
            result = "applied"
            if row is None:
                # A later event can arrive before "created": start the
                # payment where the event says it is.
                db.execute("INSERT INTO payments (id, amount, status, updated_at) VALUES (?, ?, ?, ?)",
                           (payment_id, amount, status, now_iso()))
            elif self.blind or rank(status) > rank(row[0]):
                db.execute("UPDATE payments SET status = ?, updated_at = ? WHERE id = ?",
                           (status, now_iso(), payment_id))
            else:
                result = "stale"  # we already know better; nothing to do
            if result == "applied" and status == "paid":
                db.execute("INSERT INTO ledger (payment_id, event_id, amount) VALUES (?, ?, ?)",
                           (payment_id, event_id, amount))
            elif result == "applied" and status == "refunded":
                db.execute("INSERT INTO ledger (payment_id, event_id, amount) VALUES (?, ?, ?)",
                           (payment_id, event_id, -amount))
            db.execute("COMMIT")
            return result
        except Exception:
            db.execute("ROLLBACK")
            raise


def make_handler(store, secret, check_signature):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("payhook: " + (fmt % args) + "\n")

        def reply(self, code, payload):
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            if self.path != "/webhooks/payments":
                self.reply(404, {"error": "not found"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            try:
                if check_signature:
                    verify_signature(secret, self.headers.get(SIGNATURE_HEADER), body)
                event = parse_event(body)
            except BadEvent as e:
                self.reply(400, {"error": str(e)})
                return
            try:
                result = store.apply(*event)
            except sqlite3.Error as e:
                self.log_message("apply %s: %s", event[0], e)
                self.reply(500, {"error": "try again"})
                return
            self.reply(200, {"received": True, "result": result})

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLite file")
    parser.add_argument("--addr", default="127.0.0.1:8090")
    parser.add_argument("--no-signature-check", action="store_true")
    parser.add_argument("--no-dedupe", action="store_true")
    parser.add_argument("--blind-apply", action="store_true")
    args = parser.parse_args()
    secret = os.environ.get("WEBHOOK_SECRET", "")
    if not secret and not args.no_signature_check:
        sys.exit("payhook: WEBHOOK_SECRET is not set")
    store = Store(args.db, dedupe=not args.no_dedupe, blind=args.blind_apply)
    host, _, port = args.addr.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), make_handler(store, secret, not args.no_signature_check))
    server.daemon_threads = True
    print("listening on http://%s:%d" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""orderdesk: the desk team's order service. Python's standard library only:
http.server with a thread per request, sqlite3 for the orders and the
idempotency records, one SQLite file in WAL mode.

    POST /orders
    X-Customer: c-17
    Idempotency-Key: <key>                 (required: 400 without it)
    {"sku":"A-100","qty":1,"amount":100}

    -> 201 Created {"id":12,"customer":"c-17","sku":"A-100",...}

A retry with the same key gets the stored status and body again
(Idempotent-Replayed: true); the same key with other parameters (compared
as parsed JSON) gets 422. Keys are scoped by customer.

    GET /orders?limit=5&cursor=<c>
    X-Customer: c-17

    -> 200 {"orders":[{"id":12,"idempotency_key":"...",...}],"next_cursor":"12"}

lists one customer's orders, oldest first, a page at a time: next_cursor is
null on the last page.

The correct service claims a key and writes the order in one transaction
that takes SQLite's write lock first (BEGIN IMMEDIATE), so a concurrent
duplicate waits for the first and then replays its answer. SQLite has one
writer at a time, and threads that poll its file lock starve each other
under load (seconds), so the desk queues its writes on a lock of its own
before they reach SQLite.

With --check-then-insert it does what its first release did (which had no
write queue either): look the key up, write the order, then record the
key, each in a transaction of its own; two copies of one request that
arrive together both find no key and both write an order. idemchaos must
find that with exactly-once, and the correct service clean.

Run: python3 orderdesk.py --db orders.sqlite [--addr 127.0.0.1:0]
It prints "listening on http://HOST:PORT" once it accepts connections and
stops on SIGTERM.
"""

import argparse
import json
import signal
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    customer TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    sku TEXT NOT NULL,
    qty INTEGER NOT NULL,
    amount INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    customer TEXT NOT NULL,
    key TEXT NOT NULL,
    params TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (customer, key)
);
"""


class Store:
    def __init__(self, path, check_then_insert):
        self.path = path
        self.check_then_insert = check_then_insert
        self.local = threading.local()
        self.writer = threading.Lock()
        with self.conn() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    def conn(self):
        # sqlite3 connections belong to the thread that made them.
        db = getattr(self.local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA busy_timeout=30000")
            self.local.db = db
        return db

    def create(self, customer, key, params):
        """Returns (status, body, replayed)."""
        if self.check_then_insert:
            return self._create_check_then_insert(customer, key, params)
        with self.writer:
            return self._create(customer, key, params)

    def _create(self, customer, key, params):
        db = self.conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT params, status, body FROM idempotency WHERE customer = ? AND key = ?",
                (customer, key)).fetchone()
            if row is not None:
                db.execute("COMMIT")
                return self._answer_for(row, params)
            status, body = self._insert_order(db, customer, key, params)
            db.execute(
                "INSERT INTO idempotency (customer, key, params, status, body) VALUES (?, ?, ?, ?, ?)",
                (customer, key, params, status, body))
            db.execute("COMMIT")
            return status, body, False
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _create_check_then_insert(self, customer, key, params):
        db = self.conn()
        row = db.execute(
            "SELECT params, status, body FROM idempotency WHERE customer = ? AND key = ?",
            (customer, key)).fetchone()
        if row is not None:
            return self._answer_for(row, params)
        db.execute("BEGIN")
        status, body = self._insert_order(db, customer, key, params)
        db.execute("COMMIT")
        db.execute(
            "INSERT OR REPLACE INTO idempotency (customer, key, params, status, body) VALUES (?, ?, ?, ?, ?)",
            (customer, key, params, status, body))
        return status, body, False

    @staticmethod
    def _answer_for(row, params):
        stored, status, body = row
        if stored != params:
            return 422, json.dumps({"error": "idempotency key reused with other parameters"}), False
        return status, body, True

    @staticmethod
    def _insert_order(db, customer, key, params):
        p = json.loads(params)
        cur = db.execute(
            "INSERT INTO orders (customer, idempotency_key, sku, qty, amount) VALUES (?, ?, ?, ?, ?)",
            (customer, key, p["sku"], p["qty"], p["amount"]))
        order = {"id": cur.lastrowid, "customer": customer, "sku": p["sku"], "qty": p["qty"], "amount": p["amount"]}
        return 201, json.dumps(order)

    def orders(self, customer, cursor, limit):
        rows = self.conn().execute(
            "SELECT id, idempotency_key, sku, qty, amount FROM orders WHERE customer = ? AND id > ? ORDER BY id LIMIT ?",
            (customer, cursor, limit + 1)).fetchall()
        page = [{"id": r[0], "idempotency_key": r[1], "sku": r[2], "qty": r[3], "amount": r[4]} for r in rows[:limit]]
        more = len(rows) > limit
        return {"orders": page, "next_cursor": str(page[-1]["id"]) if more else None}


def parse_order(raw):
    """The canonical form of a valid order (sorted keys), or None."""
    try:
        p = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(p, dict) or not isinstance(p.get("sku"), str):
        return None
    for field in ("qty", "amount"):
        if type(p.get(field)) is not int:
            return None
    return json.dumps(p, sort_keys=True, separators=(",", ":"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store = None

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, replayed=False):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlparse(self.path).path != "/orders":
            return self.reply(404, json.dumps({"error": "not found"}))
        customer = self.headers.get("X-Customer")
        if not customer:
            return self.reply(401, json.dumps({"error": "X-Customer is required"}))
        key = self.headers.get("Idempotency-Key")
        if not key:
            return self.reply(400, json.dumps({"error": "Idempotency-Key is required"}))
        params = parse_order(raw)
        if params is None:
            return self.reply(400, json.dumps({"error": "want {sku, qty, amount}"}))
        status, body, replayed = self.store.create(customer, key, params)
        self.reply(status, body, replayed)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/orders":
            return self.reply(404, json.dumps({"error": "not found"}))
        customer = self.headers.get("X-Customer")
        if not customer:
            return self.reply(401, json.dumps({"error": "X-Customer is required"}))
        q = parse_qs(url.query)
        try:
            cursor = int(q.get("cursor", ["0"])[0])
            limit = min(max(int(q.get("limit", ["5"])[0]), 1), 100)
        except ValueError:
            return self.reply(400, json.dumps({"error": "bad cursor or limit"}))
        self.reply(200, json.dumps(self.store.orders(customer, cursor, limit)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, help="the SQLite file")
    ap.add_argument("--addr", default="127.0.0.1:0")
    ap.add_argument("--check-then-insert", action="store_true", help="the first release's key handling")
    args = ap.parse_args()
    host, _, port = args.addr.rpartition(":")
    Handler.store = Store(args.db, args.check_then_insert)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=srv.shutdown).start())
    print("listening on http://%s:%d" % srv.server_address[:2], flush=True)
    srv.serve_forever()
    srv.server_close()


if __name__ == "__main__":
    sys.exit(main())

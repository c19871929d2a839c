#!/usr/bin/python3
"""Create one order with urllib3's Retry, as a Python service team would.

Debian's python3-urllib3 (1.26): a PoolManager with a Retry that is told
POST may be retried (allowed_methods=None: every method), 429 and 5xx
statuses retried, Retry-After respected, exponential backoff_factor. The
Idempotency-Key is set once in the headers the Retry re-sends. urllib3
1.26 has no backoff jitter. When the retries run out on a status, the last
response comes back (raise_on_status=False); when they run out on errors,
MaxRetryError is raised and this script reports a failure.

Environment: IDEMCHAOS_URL, IDEMCHAOS_PATH, IDEMCHAOS_TOKEN, IDEMCHAOS_BODY
(or the order on stdin). Prints the order id on success.
"""
import json
import os
import sys
import uuid

import urllib3


def main():
    body = os.environ.get("IDEMCHAOS_BODY") or sys.stdin.read()
    url = os.environ["IDEMCHAOS_URL"] + os.environ.get("IDEMCHAOS_PATH", "/v1/orders")
    retry = urllib3.Retry(
        total=4,
        backoff_factor=0.5,
        status_forcelist=[429, 500, 502, 503, 504],
        allowed_methods=None,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    http = urllib3.PoolManager(retries=retry, timeout=urllib3.Timeout(total=2.0))
    headers = {
        "Idempotency-Key": str(uuid.uuid4()),
        "Authorization": "Bearer " + os.environ.get("IDEMCHAOS_TOKEN", ""),
        "Content-Type": "application/json",
    }
    try:
        resp = http.request("POST", url, body=body.encode(), headers=headers)
    except urllib3.exceptions.HTTPError as e:
        print("create order:", e, file=sys.stderr)
        sys.exit(1)
    if resp.status // 100 != 2:
        print("create order:", resp.status, resp.data.decode(errors="replace"), file=sys.stderr)
        sys.exit(1)
    print(json.loads(resp.data)["id"])


if __name__ == "__main__":
    main()

#!/bin/sh
# create-order.sh — how an ops team's script creates one order with curl.
#
# The key is generated once, before curl's own retries (--retry re-sends the
# same request, headers included). curl retries a timeout and HTTP 408, 429,
# 500, 502, 503 and 504, honours Retry-After, and otherwise waits 1 s,
# doubling, with no jitter. A connection reset after the request was sent
# ("recv failure", exit 56) is not retried and ends the script with a
# failure, although the order may have been created.
#
# Environment: IDEMCHAOS_URL, IDEMCHAOS_PATH, IDEMCHAOS_TOKEN; the order
# (JSON) on stdin. Prints the order id on success.
set -eu

key=$(cat /proc/sys/kernel/random/uuid)
path=${IDEMCHAOS_PATH:-/v1/orders}

if ! out=$(curl --silent --show-error --fail \
	--retry 3 --max-time 3 \
	-H "Idempotency-Key: $key" \
	-H "Authorization: Bearer $IDEMCHAOS_TOKEN" \
	-H "Content-Type: application/json" \
	--data-binary @- \
	"$IDEMCHAOS_URL$path"); then
	echo "create-order: failed" >&2
	exit 1
fi
printf '%s\n' "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p'

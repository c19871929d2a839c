#!/usr/bin/env bash
# The test command of the README, and the one .ci/run calls: it installs what
# a fresh Debian or Ubuntu machine lacks for the tests — the PostgreSQL server
# binaries (the embedded environment starts real clusters from them), the
# MariaDB server binaries (the sql oracle's MySQL driver and the foreign
# corpus's MariaDB service are tested against a real server), python3 (the
# foreign corpus's SQLite service is a Python program), rabbitmq-server
# with python3-pika and python3-psycopg2 (the rabbitmq broker kind and the
# corpus's Python consumer on it), Chromium (the HTML
# report's browser test opens a report in it), and strace, ip and unshare
# (the address gate's test counts connect() and bind() calls in a network
# namespace with only loopback), redis-server (the Redis Streams broker of
# consumer scenarios) — then runs go test with any arguments
# given (./test.sh -run Foo ./checkers/), or, given none, go test ./...
# and then every fuzz target for a bounded time.
set -euo pipefail
cd "$(dirname "$0")"

have_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; }
have_mariadb() { command -v mariadb-install-db >/dev/null 2>&1 && { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }; }
have_chromium() { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; }
have() { command -v "$1" >/dev/null 2>&1; }
# The client corpus (examples/clients) runs real clients: curl, and a
# Python one on Debian's own urllib3 (/usr/bin/python3, not a user's).
have_urllib3() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import urllib3' >/dev/null 2>&1; }
# The rabbitmq broker kind starts throwaway nodes from Debian's
# rabbitmq-server; the foreign corpus's RabbitMQ consumer is Python on
# Debian's pika and psycopg2.
have_rabbitmq() { [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; }
have_py() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }

packages=()
have_postgres || packages+=(postgresql)
have_mariadb || packages+=(mariadb-server)
have python3 || packages+=(python3)
have curl || packages+=(curl)
have_urllib3 || packages+=(python3-urllib3)
have_rabbitmq || packages+=(rabbitmq-server)
have_py pika || packages+=(python3-pika)
have_py psycopg2 || packages+=(python3-psycopg2)
have strace || packages+=(strace)
have ip || packages+=(iproute2)
have unshare || packages+=(util-linux)
# The Redis Streams broker (harness/broker/redis) runs Debian's server.
have redis-server || [ -x /usr/bin/redis-server ] || packages+=(redis-server)
if ! have_chromium && [ "${IDEMCHAOS_BROWSER_TESTS:-1}" != 0 ]; then
  packages+=(chromium)
fi

if [ ${#packages[@]} -gt 0 ]; then
  as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      as_root=(sudo)
    else
      echo "test.sh: missing ${packages[*]}; install them as root:" >&2
      echo "  apt-get update && apt-get install -y ${packages[*]}" >&2
      echo "(or set IDEMCHAOS_BROWSER_TESTS=0 to skip the browser test on a machine without chromium)" >&2
      exit 3
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: missing ${packages[*]} and no apt-get here: install them with your package manager" >&2
    exit 3
  fi
  echo "test.sh: installing ${packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

go version
if [ $# -gt 0 ]; then
  exec go test "$@"
fi
# The docker environment's suite takes minutes on a busy machine: go
# test's default 10-minute limit per package would kill it, not judge it.
go test -timeout 30m ./...

# Then the fuzz targets of the inputs a user hands the harness (scenario
# YAML, plan files, shard and partition reports, histories), each for a
# fixed number of executions, about 5 s of an idle 2-core machine's fuzzing
# each (the targets differ ~3000x in speed), after building its
# instrumented test binary (~15 s), so about two minutes in all. A count,
# not a duration: go1.26's fuzz coordinator can report its own -fuzztime
# deadline as a failure ("context deadline exceeded", no input written;
# golang/go#75804, fixed in go1.27) when a loaded machine keeps a worker
# mid-execution at the deadline. IDEMCHAOS_FUZZTIME (a duration or Nx)
# sets every target's budget. The other fuzz targets' seed corpora run in
# go test above. A finding fails the run and leaves its input under the
# package's testdata/fuzz.
for target in \
  "FuzzParse ./scenarios 2000x" \
  "FuzzReadPlan ./cmd/idemchaos/internal/planfile 10000x" \
  "FuzzMerge ./cmd/idemchaos/internal/shard 50000x" \
  "FuzzMergePartials ./cmd/idemchaos/internal/partcheck 1000x" \
  "FuzzReader ./history 50000x"; do
  set -- $target
  fuzz_time=${IDEMCHAOS_FUZZTIME:-$3}
  echo "test.sh: fuzzing $1 in $2 for $fuzz_time"
  go test -run '^$' -fuzz "^$1\$" -fuzztime "$fuzz_time" "$2"
done

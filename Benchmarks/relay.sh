#!/usr/bin/env bash
# Relay load benchmark (docs/BENCHMARKS.md): a release build of `confidant`, then
# `confidant bench relay` against a child `confidant serve` on SQLite and on a throw-away
# PostgreSQL cluster. Generator and server share this machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product confidant --scratch-path .build-release >&2
bin=$PWD/.build-release/release/confidant

run() {  # run LABEL ARGS…
    echo "### $1"
    shift
    "$bin" bench relay "$@"
    echo
}

echo "## SQLite"
run "throughput: 32 pairs, open loop" --pairs 32 --messages 20000
run "latency at 500 messages/s" --pairs 16 --messages 10000 --rate 500
run "latency at 1,000 messages/s" --pairs 16 --messages 15000 --rate 1000
run "10,000 idle WebSockets" --pairs 4 --messages 400 --idle 10000

echo "## PostgreSQL $(ls -d /usr/lib/postgresql/*/ 2>/dev/null | sort -V | tail -1 | xargs basename 2>/dev/null || echo '?')"
export -f run
export bin
# PostgreSQL as deployed: fsync on, synchronous_commit on (the tests turn fsync off for speed).
CONFIDANT_PG_FSYNC=on Tests/with-postgres.sh bash -c '
    run "throughput: 32 pairs, open loop" --pairs 32 --messages 20000 --database "$CONFIDANT_TEST_POSTGRES_URL"
    run "latency at 500 messages/s" --pairs 16 --messages 10000 --rate 500 --database "$CONFIDANT_TEST_POSTGRES_URL"
'

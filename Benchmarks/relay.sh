#!/usr/bin/env bash
# Relay load benchmark (docs/BENCHMARKS.md): a release build of `relay-load` (Benchmarks/RelayLoad),
# which starts the relay as its own child process, on SQLite and on a throw-away PostgreSQL
# cluster. Generator and server share this machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product confidant --scratch-path .build-release >&2
swift build -c release --package-path Benchmarks --scratch-path .build-bench --product relay-load >&2
bin=$PWD/.build-release/release/confidant
load=$PWD/.build-bench/release/relay-load

run() {  # run LABEL ARGS…
    echo "### $1"
    shift
    "$load" run "$@"
    echo
}

# Reference in the same run: what the framework alone serves on this machine (wrk, 16 connections,
# 5 s): a 404 (Vapor, no database) and /v1/health (Vapor + OpenAPI runtime + one SQL statement).
if command -v wrk >/dev/null; then
    ref=$(mktemp -d)
    "$bin" serve --port 0 --data-dir "$ref" --log-level error > "$ref/out" &
    server=$!
    until grep -q listening "$ref/out" 2>/dev/null; do sleep 0.2; done
    port=$(grep -o '127.0.0.1:[0-9]*' "$ref/out" | cut -d: -f2)
    echo "## Reference (wrk -t1 -c16 -d5s)"
    echo "404, no database:      $(wrk -t1 -c16 -d5s "http://127.0.0.1:$port/nothing" | awk '/Requests\/sec/ {print $2}') requests/s"
    echo "/v1/health, one query: $(wrk -t1 -c16 -d5s "http://127.0.0.1:$port/v1/health" | awk '/Requests\/sec/ {print $2}') requests/s"
    echo
    kill $server; wait $server 2>/dev/null || true; rm -rf "$ref"
fi

echo "## SQLite"
run "throughput, sent over the stream: 32 pairs, open loop" --pairs 32 --messages 30000
run "throughput, sent over HTTP: 32 pairs, open loop" --pairs 32 --messages 20000 --transport http
run "latency at 500 messages/s" --pairs 16 --messages 10000 --rate 500
run "latency at 1,000 messages/s" --pairs 16 --messages 15000 --rate 1000
run "latency at 1,000 messages/s, sent over HTTP" --pairs 16 --messages 15000 --rate 1000 --transport http
# Idle streams (accounts seeded into the database, BenchSeed) held open while 16 pairs send 1,000/s.
# The goal is 100,000 (docs/BENCHMARKS.md). The relay holds one descriptor per stream and
# `relay-load` the other end, each process within its own open-file limit, which `relay-load`
# raises to the hard limit (not the server's defaults): 100,000 where the hard limit allows it
# (ulimit -Hn ≥ 101,000), otherwise the most it allows, in thousands (19,000 under 20,000).
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 101000 ]; then
    idle=100000
else
    idle=$(( (hard - 1000) / 1000 * 1000 ))
fi
if [ "$idle" -gt 0 ]; then
    run "$(echo "$idle" | sed -E ':a;s/^([0-9]+)([0-9]{3})/\1,\2/;ta') idle streams while 1,000 messages/s flow" --pairs 16 --messages 20000 --rate 1000 --idle "$idle"
else
    echo "### idle streams: skipped, the hard limit on open files ($hard) is too low"
    echo
fi

echo "## PostgreSQL $(ls -d /usr/lib/postgresql/*/ 2>/dev/null | sort -V | tail -1 | xargs basename 2>/dev/null || echo '?')"
export -f run
export bin load
# PostgreSQL as deployed: fsync on, synchronous_commit on (the tests turn fsync off for speed).
CONFIDANT_PG_FSYNC=on Tests/with-postgres.sh bash -c '
    run "throughput, sent over the stream: 32 pairs, open loop" --pairs 32 --messages 30000 --database "$CONFIDANT_TEST_POSTGRES_URL"
    run "throughput, sent over HTTP: 32 pairs, open loop" --pairs 32 --messages 20000 --transport http --database "$CONFIDANT_TEST_POSTGRES_URL"
    run "latency at 1,000 messages/s" --pairs 16 --messages 15000 --rate 1000 --database "$CONFIDANT_TEST_POSTGRES_URL"
'

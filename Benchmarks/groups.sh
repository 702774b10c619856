#!/usr/bin/env bash
# Group messages (docs/BENCHMARKS.md, *Groups*): `relay-load group` for 10, 100 and 1,000 member
# devices, with sender keys and one upload (`shared`) and with pairwise fan-out, the two modes
# alternating in each round (this machine's speed drifts within minutes). Prints each run, then
# per size and mode the medians over the rounds.
#   Benchmarks/groups.sh [ROUNDS] [MESSAGES]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
messages=${2:-20}
swift build -c release --package-path Benchmarks --scratch-path .build-bench --product relay-load >&2
load=$PWD/.build-bench/release/relay-load
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq 1 "$rounds"); do
    for members in 10 100 1000; do
        for mode in shared pairwise; do
            line=$("$load" group --json --members "$members" --messages "$messages" --mode "$mode" 2>/dev/null | tail -1)
            echo "$line" >> "$out"
            echo "round $round, $members devices, $mode: $line" >&2
        done
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault((r["members"], r["mode"]), []).append(r)
print("| devices | mode | uploaded B/msg | sender CPU µs/msg | 1:1 µs | × 1:1 | relay CPU µs/msg | stored B/msg | last device p50 ms |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for (members, mode), rs in sorted(runs.items()):
    m = lambda key: statistics.median(r[key] for r in rs)
    ratio = statistics.median(r["senderCPUMicrosecondsPerMessage"] / r["oneToOneSenderCPUMicroseconds"] for r in rs)
    print(f"| {members} | {mode} | {m('uploadedBytesPerMessage'):,.0f} | {m('senderCPUMicrosecondsPerMessage'):,.1f} | "
          f"{m('oneToOneSenderCPUMicroseconds'):.1f} | {ratio:.2f} | {m('relayCPUMicrosecondsPerMessage'):,.0f} | "
          f"{m('storedBytesPerMessage'):,.0f} | {m('lastDeviceP50Milliseconds'):.1f} |")
PY

#!/usr/bin/env bash
# Two builds of `relay-load kit` side by side, in alternating rounds (this machine's speed drifts
# within minutes, so only a comparison inside one run means anything): the sending path through
# ConfidantKit with 1 and with 8 callers, 1,000 messages each, the receiver's chat closed.
# Prints each round's figures, then per shape the medians and the median of the per-round ratios
# (B against A; above 1 B delivers more, below 1 B spends less CPU).
#   Benchmarks/kit-ab.sh DIR_A DIR_B [ROUNDS]      (DIR_*: a release build folder holding relay-load)
set -euo pipefail
a=${1:?the first build folder}
b=${2:?the second build folder}
rounds=${3:-5}
for dir in "$a" "$b"; do [ -x "$dir/relay-load" ] || { echo "no relay-load in $dir" >&2; exit 1; }; done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq 1 "$rounds"); do
    for window in 1 8; do
        for side in A B; do
            dir=$a; [ "$side" = B ] && dir=$b
            line=$("$dir/relay-load" kit --json --no-open-chat --messages 1000 --window "$window" 2>/dev/null | tail -1)
            echo "$round $window $side $line" >> "$out"
            echo "round $round, $window in flight, $side: $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%.0f msg/s, clients %.0f us/msg, relay %.0f us/msg, lost %d, duplicated %d" % (r["deliveredPerSecond"], r["generatorCPUMicrosecondsPerMessage"], r["serverCPUMicrosecondsPerMessage"], r["lost"], r["duplicated"]))' "$line")" >&2
        done
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    round_, window, side, data = line.split(" ", 3)
    rows.setdefault(window, {}).setdefault(round_, {})[side] = json.loads(data)
for window, by_round in sorted(rows.items()):
    pairs = [r for r in by_round.values() if "A" in r and "B" in r]
    def med(side, key): return statistics.median(r[side][key] for r in pairs)
    rate = statistics.median(r["B"]["deliveredPerSecond"] / r["A"]["deliveredPerSecond"] for r in pairs)
    cpu = statistics.median(r["B"]["generatorCPUMicrosecondsPerMessage"] / r["A"]["generatorCPUMicrosecondsPerMessage"] for r in pairs)
    lo = min(r["B"]["deliveredPerSecond"] / r["A"]["deliveredPerSecond"] for r in pairs)
    hi = max(r["B"]["deliveredPerSecond"] / r["A"]["deliveredPerSecond"] for r in pairs)
    lost = sum(r[s]["lost"] + r[s]["duplicated"] for r in pairs for s in "AB")
    print(f"{window} in flight, {len(pairs)} rounds: A {med('A','deliveredPerSecond'):.0f} msg/s ({med('A','generatorCPUMicrosecondsPerMessage'):.0f} us client CPU/msg), "
          f"B {med('B','deliveredPerSecond'):.0f} msg/s ({med('B','generatorCPUMicrosecondsPerMessage'):.0f} us); "
          f"B/A rate {rate:.2f}x (rounds {lo:.2f}-{hi:.2f}), client CPU {cpu:.2f}x; lost or duplicated {lost}")
PY

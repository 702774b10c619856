#!/usr/bin/env bash
# Builds the libFuzzer targets and fuzzes each for a bounded time, starting from its committed
# seed corpus (Fuzz/Corpus/<target>, well-formed inputs of each kind; the first byte of an input
# picks the parser).
#   Fuzz/run.sh [SECONDS_PER_TARGET]   (default 30)
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
targets=(EnvelopeFuzzer StreamFrameFuzzer)
for target in "${targets[@]}"; do
    rm -f ".build/release/$target"  # a failed build must not fuzz an old binary
    swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld --product "$target" 2>&1 \
        | grep -E 'error|warning:|Build complete' || true
    [ -x ".build/release/$target" ] || { echo "fuzzer build failed: $target" >&2; exit 1; }
done
for target in "${targets[@]}"; do
    corpus=$(mktemp -d)
    cp "Corpus/$target"/* "$corpus/"
    echo "== $target, $seconds s"
    ".build/release/$target" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
    rm -rf "$corpus"
done

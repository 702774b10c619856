#!/usr/bin/env bash
# Builds the libFuzzer target and fuzzes envelope parsing and key import for a bounded time.
#   Fuzz/run.sh [SECONDS]   (default 60)
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
rm -f .build/release/EnvelopeFuzzer  # a failed build must not fuzz an old binary
swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld --product EnvelopeFuzzer 2>&1 | grep -E 'error|warning:|Compiling EnvelopeFuzzer|Build complete' || true
[ -x .build/release/EnvelopeFuzzer ] || { echo 'fuzzer build failed' >&2; exit 1; }
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
# Seed the corpus with one well-formed input of each kind.
printf '\x00\x01\x01\x00' > "$corpus/envelope-start"
printf '\x03%s' 'lFuvv%2BSbv%2F5cM9Sc0IPadc6AWq8fKoLPsBDgloFjWCpA9%2FaSoyUGniLMD%2BBMDmgyL0RZ5FEG1UMl7iO4xmvRhA%3D%3D' > "$corpus/seed-key"
printf '\x02-----BEGIN CONFIDANT PUBLIC IDENTITY-----\nAQ==\n-----END CONFIDANT PUBLIC IDENTITY-----\n' > "$corpus/pem"
.build/release/EnvelopeFuzzer -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12

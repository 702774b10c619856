#!/usr/bin/env bash
# The seed's S-block cipher through the CLI (`confidant lab encrypt --algorithm sblock`, stdin to
# stdout) next to `openssl enc -rc4` (the legacy provider) on the same bytes, in alternating pairs
# so each ratio compares neighbouring runs on a machine whose speed drifts. Reports the median wall
# and CPU time (user + system) of each, and the median per-pair ratio (openssl time / confidant
# time: 1 means as fast as OpenSSL's RC4). Needs a release build (see below) and openssl.
#   Benchmarks/sblock-cli.sh [SIZE_MiB] [PAIRS]      (default 64 5)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-64}
pairs=${2:-5}
confidant=${CONFIDANT_BIN:-.build-release/release/confidant}
[ -x "$confidant" ] || { echo "build first: swift build -c release --product confidant --scratch-path .build-release" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M') UTC; $(openssl version)"
PYTHONPATH=Benchmarks python3 - "$confidant" "$work" "$size_mib" "$pairs" <<'PY'
import os, statistics, subprocess, sys, time
import child_usage
confidant, work, size_mib, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
source = f"{work}/input.bin"
with open(source, "wb") as f:
    f.write(os.urandom(size_mib << 20))

def run(command):
    """Wall and CPU seconds (user + system, from wait4) of one command, stdin from the file."""
    with open(source, "rb") as stdin, open(f"{work}/out.bin", "wb") as stdout:
        wall, cpu, _ = child_usage.run(command, stdin=stdin, stdout=stdout)
    assert os.path.getsize(f"{work}/out.bin") == size_mib << 20, command
    return wall, cpu

key = "benchmark key"
ours = [confidant, "lab", "encrypt", "--algorithm", "sblock", "--key", key]
theirs = ["openssl", "enc", "-rc4", "-provider", "legacy", "-provider", "default", "-nosalt", "-K", key.encode().hex()]
results = {"openssl rc4": [], "confidant sblock": []}
for _ in range(pairs):
    results["openssl rc4"].append(run(theirs))
    results["confidant sblock"].append(run(ours))
print(f"| {size_mib} MiB, {pairs} pairs | wall (median) | MB/s | CPU (median) | confidant / openssl, wall | CPU |")
print("|---|---:|---:|---:|---:|---:|")
wall_ratio = statistics.median(o[0] / c[0] for o, c in zip(results["openssl rc4"], results["confidant sblock"]))
cpu_ratio = statistics.median(o[1] / c[1] for o, c in zip(results["openssl rc4"], results["confidant sblock"]))
for who, runs in results.items():
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    extra = f"**{wall_ratio:.2f}x** | {cpu_ratio:.2f}x" if who.startswith("confidant") else " | "
    print(f"| {who} | {wall:.3f} s | {(size_mib << 20) / wall / 1e6:.0f} | {cpu:.3f} s | {extra} |")
print("per-pair wall ratios:", [f"{o[0] / c[0]:.2f}" for o, c in zip(results["openssl rc4"], results["confidant sblock"])])
PY

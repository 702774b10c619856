#!/usr/bin/env bash
# Encrypt and decrypt one file with `confidant vault` (add / export) and with `age` (X25519
# recipient, no passphrase KDF), in alternating pairs (age, confidant, age, confidant, …) so each
# ratio compares neighbouring runs on this machine, whose speed drifts; an untimed first pair
# warms the pages both then write into. Reports per operation the
# median wall time, throughput, CPU time (user + system) and peak RSS of each process, and the
# median of the per-pair ratios (age time / confidant time: above 1, confidant is faster).
# Needs a release build (see below) and age.
#   Benchmarks/vault-vs-age.sh [SIZE_MiB] [PAIRS]      (default 1024 5)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
pairs=${2:-5}
# The release build Benchmarks/relay.sh makes (scratch path .build-release), unless CONFIDANT_BIN names another.
confidant=${CONFIDANT_BIN:-.build-release/release/confidant}
[ -x "$confidant" ] || { echo "build first: swift build -c release --product confidant --scratch-path .build-release" >&2; exit 1; }
command -v age >/dev/null || { echo "install age: apt-get install age" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M') UTC; files in ${TMPDIR:-/tmp}"
PYTHONPATH=Benchmarks python3 - "$confidant" "$work" "$size_mib" "$pairs" <<'PY'
import os, statistics, subprocess, sys, time
import child_usage
confidant, work, size_mib, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
env = {**os.environ, "CONFIDANT_HOME": f"{work}/home", "CONFIDANT_PASSPHRASE": "benchmark"}

def run(command):
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one command."""
    return child_usage.run(command, env=env)

source = f"{work}/input.bin"
with open(source, "wb") as f:
    for _ in range(size_mib):
        f.write(os.urandom(1 << 20))
subprocess.run(["age-keygen", "-o", f"{work}/age.key"], check=True, capture_output=True)
recipient = subprocess.run(["age-keygen", "-y", f"{work}/age.key"], check=True, capture_output=True, text=True).stdout.strip()
subprocess.run([confidant, "vault", "init", "--scrypt-log2n", "10"], check=True, env=env, capture_output=True)
subprocess.run([confidant, "vault", "chapter", "add", "bench"], check=True, env=env, capture_output=True)

def age_round(timed):
    """age encrypts, then decrypts; its files are removed, so the next tool writes into the pages they used."""
    encrypt = run(["age", "-r", recipient, "-o", f"{work}/input.age", source])
    decrypt = run(["age", "-d", "-i", f"{work}/age.key", "-o", f"{work}/age.out", f"{work}/input.age"])
    assert subprocess.run(["cmp", "-s", source, f"{work}/age.out"]).returncode == 0, "age round trip mismatch"
    for leftover in [f"{work}/input.age", f"{work}/age.out"]:
        os.remove(leftover)
    if timed:
        results["age encrypt"].append(encrypt)
        results["age decrypt"].append(decrypt)

def confidant_round(timed):
    """confidant adds the file to the vault, then exports it; the item and the export are removed."""
    encrypt = run([confidant, "vault", "add", "--chapter", "bench", "--file", source])
    item = subprocess.run([confidant, "vault", "list"], check=True, env=env, capture_output=True, text=True).stdout
    item = item.strip().splitlines()[-1][:8]
    decrypt = run([confidant, "vault", "export", item, f"{work}/out"])
    assert subprocess.run(["cmp", "-s", source, f"{work}/out/input.bin"]).returncode == 0, "round trip mismatch"
    os.remove(f"{work}/out/input.bin")
    subprocess.run([confidant, "vault", "rm", item], check=True, env=env, capture_output=True)
    if timed:
        results["confidant encrypt"].append(encrypt)
        results["confidant decrypt"].append(decrypt)

# Each tool removes its outputs as soon as they are checked, so both write into the same
# recycled tmpfs pages: on this VM, pages the guest has not touched lately cost several times
# more to fill than recycled ones, and the order of the runs used to decide who got which.
# The untimed first round touches those pages.
results = {key: [] for key in ["age encrypt", "confidant encrypt", "age decrypt", "confidant decrypt"]}
age_round(timed=False)
confidant_round(timed=False)
for _ in range(pairs):
    age_round(timed=True)
    confidant_round(timed=True)

print(f"| {size_mib} MiB, {pairs} pairs | wall (median) | MiB/s | CPU (median) | peak RSS | confidant / age, wall | CPU |")
print("|---|---:|---:|---:|---:|---:|---:|")
for operation in ["encrypt", "decrypt"]:
    ours, theirs = results[f"confidant {operation}"], results[f"age {operation}"]
    wall_ratio = statistics.median(a[0] / c[0] for a, c in zip(theirs, ours))
    cpu_ratio = statistics.median(a[1] / c[1] for a, c in zip(theirs, ours))
    for who, runs in [("age", theirs), ("confidant", ours)]:
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        extra = f"**{wall_ratio:.2f}x** | {cpu_ratio:.2f}x" if who == "confidant" else " | "
        print(f"| {who} {operation} | {wall:.2f} s | {size_mib / wall:.0f} | {cpu:.2f} s | {max(r[2] for r in runs):.0f} MiB | {extra} |")
for key, runs in results.items():
    print(f"{key}: wall", " ".join(f"{r[0]:.2f}" for r in runs), "s; CPU", " ".join(f"{r[1]:.2f}" for r in runs), "s")
print("per-pair wall ratios:", {op: [f"{a[0] / c[0]:.2f}" for a, c in zip(results[f'age {op}'], results[f'confidant {op}'])]
                                for op in ["encrypt", "decrypt"]})
PY

#!/usr/bin/env bash
# Encrypt and decrypt one file with `confidant vault` (add / export) and with `age` (X25519
# recipient, no passphrase KDF), in the same run, on the same file. Reports wall time,
# throughput and peak RSS of each process. Needs: a release build (see below) and age.
#   Benchmarks/vault-vs-age.sh [SIZE_MiB]      (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
# The release build Benchmarks/relay.sh makes (scratch path .build-release), unless CONFIDANT_BIN names another.
confidant=${CONFIDANT_BIN:-.build-release/release/confidant}
[ -x "$confidant" ] || { echo "build first: swift build -c release --product confidant --scratch-path .build-release" >&2; exit 1; }
command -v age >/dev/null || { echo "install age: apt-get install age" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CONFIDANT_HOME="$work/home" CONFIDANT_PASSPHRASE=benchmark

# Measures wall seconds and the child's peak RSS (KiB) of one command.
measure() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
start = time.monotonic()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
elapsed = time.monotonic() - start
if code: sys.exit(code)
print(f"{elapsed:.3f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}

head -c $((size_mib << 20)) /dev/urandom > "$work/input.bin"
age-keygen -o "$work/age.key" 2>/dev/null
recipient=$(age-keygen -y "$work/age.key")
"$confidant" vault init --scrypt-log2n 10 >/dev/null
"$confidant" vault chapter add bench >/dev/null
sync

read -r age_enc_s age_enc_kib < <(measure age -r "$recipient" -o "$work/input.age" "$work/input.bin")
read -r age_dec_s age_dec_kib < <(measure age -d -i "$work/age.key" -o "$work/age.out" "$work/input.age")
rm -f "$work/age.out" "$work/input.age"
read -r cf_enc_s cf_enc_kib < <(measure "$confidant" vault add --chapter bench --file "$work/input.bin")
id=$("$confidant" vault list | head -1 | cut -c1-8)
read -r cf_dec_s cf_dec_kib < <(measure "$confidant" vault export "$id" "$work/out")
cmp -s "$work/input.bin" "$work/out/input.bin" || { echo "round trip mismatch" >&2; exit 1; }

python3 - "$size_mib" "$age_enc_s" "$age_enc_kib" "$age_dec_s" "$age_dec_kib" "$cf_enc_s" "$cf_enc_kib" "$cf_dec_s" "$cf_dec_kib" <<'PY'
import sys
mib = int(sys.argv[1]); v = list(map(float, sys.argv[2:]))
rows = [("encrypt", v[0], v[1], v[4], v[5]), ("decrypt", v[2], v[3], v[6], v[7])]
print(f"| {mib} MiB file | age s | age MiB/s | age peak RSS | confidant s | confidant MiB/s | confidant peak RSS | confidant / age |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, a_s, a_kib, c_s, c_kib in rows:
    print(f"| {name} | {a_s:.2f} | {mib/a_s:.0f} | {a_kib/1024:.0f} MiB | {c_s:.2f} | {mib/c_s:.0f} | {c_kib/1024:.0f} MiB | {a_s/c_s:.2f}x |")
PY

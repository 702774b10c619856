#!/usr/bin/env bash
# Runs the Swift benchmarks and, in the same run, the references they are compared with
# (openssl speed for AES-256-GCM and ChaCha20-Poly1305 on 1 MiB buffers). Prints markdown.
set -euo pipefail
cd "$(dirname "$0")"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(date -u '+%Y-%m-%d %H:%M') UTC"
echo "## openssl speed (reference), 16 KiB and 1 MiB buffers (numbers in 1000s of bytes per second)"
echo '```'
openssl version
for bytes in 16384 1048576; do
    openssl speed -evp aes-256-gcm -seconds 3 -bytes $bytes 2>/dev/null | tail -n 1
    openssl speed -evp chacha20-poly1305 -seconds 3 -bytes $bytes 2>/dev/null | tail -n 1
    openssl speed -provider legacy -provider default -evp rc4 -seconds 3 -bytes $bytes 2>/dev/null | tail -n 1
done
echo '```'
echo
echo "## swift package benchmark"
swift package --disable-sandbox benchmark --format markdown "$@" 2>/dev/null

echo
echo "## vault vs age, 1 GiB file (files in /dev/shm to keep disk write-back out of the figures)"
(cd .. && swift build -c release --product confidant --scratch-path .build-release >/dev/null && TMPDIR=/dev/shm Benchmarks/vault-vs-age.sh 1024)

echo
echo "## S-block through the CLI vs openssl enc -rc4, 64 MiB"
(cd .. && TMPDIR=/dev/shm Benchmarks/sblock-cli.sh 64)

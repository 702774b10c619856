#!/usr/bin/env bash
# Streams one vault video through `confidant app` (GET /vault/media/ID, decrypted per range as a
# player asks) and, as the reference in the same run, decrypts the same file to disk with
# `confidant vault export`. Reports wall and CPU seconds, throughput, and the app's peak RSS
# (VmHWM) before and after, which must stay flat however large the file is.
#   Benchmarks/app-media.sh [SIZE_MiB]      (default 1024)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-1024}
confidant=${CONFIDANT_BIN:-.build-release/release/confidant}
[ -x "$confidant" ] || { echo "build first: swift build -c release --product confidant --scratch-path .build-release" >&2; exit 1; }
work=$(mktemp -d)
app_pid=
trap '[ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null; rm -rf "$work"' EXIT
export CONFIDANT_HOME="$work/home" CONFIDANT_PASSPHRASE=benchmark

head -c $((size_mib << 20)) /dev/urandom > "$work/clip.webm"
"$confidant" vault init --scrypt-log2n 10 >/dev/null
"$confidant" vault chapter add bench >/dev/null
"$confidant" vault add --chapter bench --file "$work/clip.webm" >/dev/null
rm "$work/clip.webm"
sync

# The reference: decrypt to disk with the CLI.
read -r ref_wall ref_cpu ref_rss < <(python3 - "$confidant" "$work/out" <<'PY'
import resource, subprocess, sys, time
start = time.monotonic()
item = subprocess.run([sys.argv[1], "vault", "list"], capture_output=True, text=True, check=True).stdout.split()[0][:8]
subprocess.run([sys.argv[1], "vault", "export", item, sys.argv[2]], stdout=subprocess.DEVNULL, check=True)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.3f} {usage.ru_utime + usage.ru_stime:.3f} {usage.ru_maxrss}")
PY
)
rm -rf "$work/out"

# The app: unlock the vault through its form, then stream the file as a browser would.
"$confidant" app --port 0 --no-open > "$work/app.out" 2>/dev/null &
app_pid=$!
for _ in $(seq 100); do [ -s "$work/app.out" ] && break; sleep 0.1; done
python3 - "$(head -1 "$work/app.out" | cut -d' ' -f2)" "$app_pid" "$size_mib" "$ref_wall" "$ref_cpu" "$ref_rss" <<'PY'
import http.client, re, sys, time, urllib.parse
url, pid, size_mib = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ref_wall, ref_cpu, ref_rss = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
def request(method, path, headers={}, body=None, sink=False):
    connection = http.client.HTTPConnection("127.0.0.1", url.port, timeout=600)
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    total = 0
    if sink:
        while chunk := response.read(1 << 20):
            total += len(chunk)
        return response, total
    return response, response.read().decode()
def status():
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    ticks = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    cpu = (int(ticks[11]) + int(ticks[12])) / 100
    return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0]), cpu
response, _ = request("GET", f"{url.path}?{url.query}")
cookie = response.getheader("Set-Cookie").split(";")[0]
_, page = request("GET", "/vault", {"Cookie": cookie})
token = re.search(r'name="_csrf" value="([^"]+)"', page).group(1)
origin = f"http://127.0.0.1:{url.port}"
form = urllib.parse.urlencode({"_csrf": token, "passphrase": "benchmark"})
request("POST", "/vault/unlock", {"Cookie": cookie, "Origin": origin,
        "Content-Type": "application/x-www-form-urlencoded"}, form)
_, page = request("GET", "/vault", {"Cookie": cookie})
media = re.search(r'/vault/media/([0-9a-f-]+)', page).group(1)
peak_before, rss_before, cpu_before = status()
start = time.monotonic()
response, total = request("GET", f"/vault/media/{media}", {"Cookie": cookie}, sink=True)
wall = time.monotonic() - start
peak_after, rss_after, cpu_after = status()
assert response.status == 200 and total == size_mib << 20, (response.status, total)
# A player's pattern too: 100 ranges of 256 KiB at spread offsets.
start = time.monotonic()
for i in range(100):
    offset = (i * 7919 * 65_536) % ((size_mib << 20) - (1 << 18))
    response, got = request("GET", f"/vault/media/{media}", {"Cookie": cookie, "Range": f"bytes={offset}-{offset + (1 << 18) - 1}"}, sink=True)
    assert response.status == 206 and got == 1 << 18
ranges = time.monotonic() - start
peak_end, _, cpu_end = status()
print(f"file: {size_mib} MiB (random bytes as a video)")
print(f"reference, vault export to disk: {ref_wall:.2f} s wall, {ref_cpu:.2f} s CPU, {size_mib / ref_wall:.0f} MiB/s, peak RSS {ref_rss / 1024:.0f} MiB")
print(f"app, streamed over HTTP:         {wall:.2f} s wall, {cpu_after - cpu_before:.2f} s CPU (app process), {size_mib / wall:.0f} MiB/s")
print(f"app peak RSS (VmHWM): {peak_before / 1024:.0f} MiB before, {peak_after / 1024:.0f} MiB after the stream, {peak_end / 1024:.0f} MiB after 100 range requests")
print(f"100 range requests of 256 KiB: {ranges:.2f} s wall, {cpu_end - cpu_after:.2f} s CPU, {ranges * 10:.1f} ms each")
PY

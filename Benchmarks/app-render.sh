#!/usr/bin/env bash
# How long `confidant app` takes to answer its two heaviest pages, server-side on loopback: the
# conversation list with 1,000 conversations and a chat with 10,000 messages (it opens at the
# newest 200, beside the 100 most recent conversations). The profile is synthetic (app-fixture writes it straight into the store) and
# offline. Reports the median and the slowest of 30 requests each, the app's CPU time per
# request, and, as the reference measured in the same run, the same requests to /assets/app.css
# (the app's cheapest answer: the HTTP round trip alone).
#   Benchmarks/app-render.sh [CONVERSATIONS] [MESSAGES]      (default 1000 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
conversations=${1:-1000}
messages=${2:-10000}
bin=${CONFIDANT_BIN_DIR:-.build-release/release}
[ -x "$bin/confidant" ] && [ -x "$bin/app-fixture" ] || {
    echo "build first: for p in confidant app-fixture; do swift build -c release --product \$p --scratch-path .build-release; done" >&2
    echo "(or CONFIDANT_BIN_DIR=.build/debug for a debug build)" >&2
    exit 1
}
work=$(mktemp -d)
app_pid=
trap '[ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null; rm -rf "$work"' EXIT
export CONFIDANT_HOME="$work/home" CONFIDANT_PASSPHRASE=benchmark
peer=$("$bin/app-fixture" "$work/home/bench" benchmark "$conversations" "$messages")
"$bin/confidant" app --profile bench --port 0 --no-open > "$work/app.out" 2>/dev/null &
app_pid=$!
for _ in $(seq 100); do [ -s "$work/app.out" ] && break; sleep 0.1; done
python3 - "$(head -1 "$work/app.out" | cut -d' ' -f2)" "$app_pid" "$peer" "$conversations" "$messages" <<'PY'
import http.client, statistics, sys, time, urllib.parse
url, pid, peer = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
conversations, messages = sys.argv[4], sys.argv[5]
connection = http.client.HTTPConnection("127.0.0.1", url.port, timeout=120)
def get(path, cookie=None):
    connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    response = connection.getresponse()
    return response, response.read()
def cpu():
    ticks = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(ticks[11]) + int(ticks[12])) / 100
response, _ = get(f"{url.path}?{url.query}")
cookie = response.getheader("Set-Cookie").split(";")[0]
def measure(path, check):
    response, body = get(path, cookie)  # warm: the first read of the store, template parsing
    assert response.status == 200 and check(body), (path, response.status, body[:200])
    times, start_cpu = [], cpu()
    for _ in range(30):
        start = time.perf_counter()
        response, body = get(path, cookie)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status == 200
    return statistics.median(times), max(times), (cpu() - start_cpu) / 30 * 1000, len(body)
rows = lambda body: body.count(b'class="conversation"') == int(conversations)
bubbles = lambda body: (body.count(b'<li class="message') == min(200, int(messages))
                        and body.count(b'class="conversation"') == min(100, int(conversations)))
for name, path, check in [("reference: /assets/app.css", "/assets/app.css", lambda b: True),
                          (f"conversation list, {conversations} conversations", "/conversations", rows),
                          (f"chat with {messages} messages (newest 200, beside 100 conversations)", f"/chat/{peer}", bubbles)]:
    median, slowest, cpu_ms, size = measure(path, check)
    print(f"{name}: median {median:.1f} ms, slowest {slowest:.1f} ms, app CPU {cpu_ms:.1f} ms/request, {size / 1024:.0f} KiB")
PY

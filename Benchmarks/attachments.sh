#!/usr/bin/env bash
# Attachment throughput through a local relay (docs/BENCHMARKS.md): `confidant send --attach`
# (encrypt, upload, grant, send) and `confidant attachment save` (download, check the digest,
# decrypt) for 1 MiB and 100 MiB files, next to `curl` moving the same bytes to and from the same
# server (POST /v1/blobs, GET /v1/blobs/ID) in the same run, in alternating rounds. Reports
# medians of wall time and throughput, with the CPU time (user + system) of the client process
# and of the server for each.
#   Benchmarks/attachments.sh [ROUNDS]      (default 5; needs a release build and curl)
# With CONFIDANT_BENCH_DATABASE=postgres://… the relay keeps the blobs in that PostgreSQL
# database instead of files (e.g. under Tests/with-postgres.sh, its CONFIDANT_TEST_POSTGRES_URL);
# the server CPU column is then the relay's alone, not PostgreSQL's.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
bin=${CONFIDANT_BIN_DIR:-.build-release/release}
bench=${CONFIDANT_BENCH_DIR:-.build-bench/release}
[ -x "$bin/confidant" ] && [ -x "$bench/relay-load" ] || {
    echo "build first: swift build -c release --product confidant --scratch-path .build-release" >&2
    echo "       and: swift build -c release --package-path Benchmarks --scratch-path .build-bench --product relay-load" >&2
    exit 1
}
command -v curl >/dev/null || { echo "needs curl (apt-get install curl)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/confidant-attach.XXXXXX")
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
database=()
[ -n "${CONFIDANT_BENCH_DATABASE:-}" ] && database=(--database "$CONFIDANT_BENCH_DATABASE")
"$bin/confidant" serve --port 0 --data-dir "$work/server" --log-level error --max-attachment-mib 200 \
    --min-free-mib 0 "${database[@]}" > "$work/server.out" &
server_pid=$!
for _ in $(seq 200); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.out")
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%Y-%m-%d); blobs in $([ ${#database[@]} -gt 0 ] && echo PostgreSQL || echo files)"
python3 - "$bin" "$work" "$url" "$server_pid" "$rounds" "$bench" <<'PY'
import glob, json, os, re, resource, statistics, subprocess, sys, time
bin, work, url, server_pid, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
bench = sys.argv[6]
env = {**os.environ, "CONFIDANT_HOME": f"{work}/home", "CONFIDANT_PASSPHRASE": "benchmark", "NO_COLOR": "1"}
outbox = f"{work}/server/outbox"

def code_for(email, after):
    for _ in range(400):
        for name in sorted(glob.glob(f"{outbox}/*.eml"), reverse=True):
            text = open(name).read()
            if int(os.path.basename(name).split("-")[0]) >= after and f"To: {email}\n" in text:
                return re.search(r"sign-in code is ([^.]+)\.", text).group(1)
        time.sleep(0.05)
    raise SystemExit(f"no code for {email}")

for profile in ["alice", "bob"]:
    email = f"{profile}@example.com"
    started = int(time.time() * 1000) - 1000
    p = subprocess.Popen([f"{bin}/confidant", "account", "register", "--profile", profile, "--server", url,
                          "--email", email, "--name", profile, "--password-stdin", "--scrypt-log2n", "10"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    p.stdin.write("benchmark password\n"); p.stdin.flush()
    p.stdin.write(code_for(email, started) + "\n"); p.stdin.flush()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
token = subprocess.run([f"{bench}/relay-load", "token", "--server", url, "--data-dir", f"{work}/server"],
                       capture_output=True, text=True, check=True).stdout.strip()

def server_cpu():
    fields = open(f"/proc/{server_pid}/stat").read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def timed(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before, start = server_cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, (command, done.stderr.decode()[-400:])
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, client, server_cpu() - server_before, done.stdout

results = {}
for size_mib in [1, 100]:
    source = f"{work}/file-{size_mib}.bin"
    with open(source, "wb") as f:
        for _ in range(size_mib):
            f.write(os.urandom(1 << 20))
    for round in range(rounds):
        # confidant: send (encrypt + upload + grant + send), then save (download + check + decrypt)
        wall, client, server, _ = timed([f"{bin}/confidant", "send", "--profile", "alice", "bob@example.com",
                                         "--attach", source])
        results.setdefault((size_mib, "confidant up"), []).append((wall, client, server))
        history = json.loads(subprocess.run([f"{bin}/confidant", "chat", "history", "--profile", "bob",
                                             "alice@example.com", "--json", "--limit", "1"],
                                            capture_output=True, env=env, check=True).stdout)
        out = f"{work}/saved-{round}"
        wall, client, server, _ = timed([f"{bin}/confidant", "attachment", "save", "--profile", "bob",
                                         history[-1]["id"], "--out", out])
        results.setdefault((size_mib, "confidant down"), []).append((wall, client, server))
        assert os.path.getsize(f"{out}/file-{size_mib}.bin") == size_mib << 20
        subprocess.run(["rm", "-rf", out], check=True)
        # curl: the same bytes to and from the same server
        wall, client, server, stdout = timed(["curl", "-sS", "-X", "POST", "-H", f"Authorization: Bearer {token}",
                                              "-H", "Content-Type: application/octet-stream", "-H", "Expect:", "-T", source,
                                              f"{url}/v1/blobs"])
        results.setdefault((size_mib, "curl up"), []).append((wall, client, server))
        blob = json.loads(stdout)["blobId"]
        wall, client, server, _ = timed(["curl", "-sS", "-o", f"{work}/curl.out", "-H",
                                         f"Authorization: Bearer {token}", f"{url}/v1/blobs/{blob}"])
        results.setdefault((size_mib, "curl down"), []).append((wall, client, server))
        subprocess.run(["curl", "-sS", "-X", "DELETE", "-H", f"Authorization: Bearer {token}",
                        f"{url}/v1/blobs/{blob}"], check=True, capture_output=True)

print(f"{'file':>8} {'what':<16} {'wall':>9} {'MiB/s':>8} {'client CPU':>11} {'server CPU':>11} {'vs curl':>8}")
for size_mib in [1, 100]:
    for direction in ["up", "down"]:
        medians = {}
        for who in ["curl", "confidant"]:
            runs = results[(size_mib, f"{who} {direction}")]
            wall = statistics.median(r[0] for r in runs)
            medians[who] = wall
            ratio = "" if who == "curl" else f"{medians['curl'] / wall:.2f}x"
            print(f"{size_mib:>5} MiB {who + ' ' + direction:<16} {wall * 1000:>7.0f} ms {size_mib / wall:>8.0f} "
                  f"{statistics.median(r[1] for r in runs) * 1000:>8.0f} ms {statistics.median(r[2] for r in runs) * 1000:>8.0f} ms {ratio:>8}")
PY

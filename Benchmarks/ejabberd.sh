#!/usr/bin/env bash
# Confidant's relay beside ejabberd (Debian's 23.01), the XMPP server large deployments run, in one
# run on this machine (docs/BENCHMARKS.md, issue #25). Same load shapes for both, alternating
# round by round; medians at the end, and each shape's rate against ejabberd's in-memory routing
# round by round (the goals' ratios: their median and range):
#   - 32 sender/receiver pairs, open loop, 30,000 messages of a 200-byte body (Confidant: its
#     1,280-byte padded envelopes, sealed before the clock starts);
#   - one sender with 1 and with 8 messages in flight; both also through ConfidantKit itself
#     (`relay-load kit`: two messengers, Messenger.send as the app calls it, sealing and both local
#     stores included, 1,000 messages; 8 callers at once for the second, whose outbox then goes
#     in windows of ordered sends);
#   - one sender at 50 messages/s for 20 s (latency), in the first round only; through
#     ConfidantKit also with the receiver's chat open, the latency then measured to its
#     ChatViewModel (the goal's "send to the peer's view model").
# ejabberd runs twice: routing in memory (nothing stored) and archiving every message to SQLite
# (mod_mam, WAL). Its accounts are seeded into its SQLite file directly, as `pgbench -i` does.
# Reports delivered messages/s, the server's CPU time (user + system) per message, its peak
# resident memory, and lost and duplicated messages (both must be 0).
#   Benchmarks/ejabberd.sh [ROUNDS]     (default 5; installs ejabberd with apt-get when root)
# SHAPES=pairs,one,eight,rate picks shapes (default all of them); CONFIDANT_BENCH_DIR another build of relay-load.
# Run under Tests/with-postgres.sh (CONFIDANT_PG_FSYNC=on for a durable cluster) and every shape
# except the ConfidantKit ones also runs Confidant's relay on that PostgreSQL, its server CPU then
# counting PostgreSQL's processes too:
#   CONFIDANT_PG_FSYNC=on Tests/with-postgres.sh Benchmarks/ejabberd.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
bin=${CONFIDANT_BENCH_DIR:-.build-bench/release}
# relay-load runs the relay itself (its own binary as the server child), so it is all it needs.
[ -x "$bin/relay-load" ] || {
    echo "build first: swift build -c release --package-path Benchmarks --scratch-path .build-bench --product relay-load" >&2
    exit 1
}
if ! [ -d /usr/lib/x86_64-linux-gnu/ejabberd-23.01-1 ] && ! ls -d /usr/lib/*/ejabberd-* >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { echo "needs ejabberd: sudo apt-get install ejabberd erlang-p1-sqlite3" >&2; exit 1; }
    # The package would start its system-wide service; this benchmark starts its own instances.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ejabberd erlang-p1-sqlite3 >/dev/null
    rm -f /usr/sbin/policy-rc.d
fi
schema=/usr/share/ejabberd/sql/lite.sql
ebin=$(ls -d /usr/lib/*/ejabberd-*/ebin | head -1)

work=$(mktemp -d "${TMPDIR:-/tmp}/confidant-ejabberd.XXXXXX")
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_ejabberd NAME MODULES → sets port_NAME and pid_NAME
start_ejabberd() {
    local name=$1 modules=$2 dir="$work/$1" port
    port=$(free_port)
    mkdir -p "$dir/spool"
    python3 - "$dir/ejabberd.db" "$schema" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript(open(sys.argv[2]).read())
db.execute("PRAGMA journal_mode=WAL")
db.executemany("INSERT INTO users(username, password) VALUES (?, 'benchmark')", [(f"u{i}",) for i in range(64)])
db.commit()
PY
    cat > "$dir/ejabberd.yml" <<EOF
hosts: [localhost]
loglevel: warning
log_rotate_count: 0
certfiles: []
listen:
  - port: $port
    ip: "127.0.0.1"
    module: ejabberd_c2s
    backlog: 1024
    max_stanza_size: 262144
    starttls: false
auth_method: sql
auth_password_format: plain
sql_type: sqlite
sql_database: "$dir/ejabberd.db"
modules: $modules
EOF
    local run=()
    if [ "$(id -u)" = 0 ]; then
        chown -R ejabberd:ejabberd "$dir"
        run=(setpriv --reuid=ejabberd --regid=ejabberd --clear-groups)
    fi
    (cd "$dir" && exec env HOME="$dir" ERL_LIBS="$(dirname "$(dirname "$ebin")")" \
        EJABBERD_CONFIG_PATH="$dir/ejabberd.yml" EJABBERD_LOG_PATH="$dir/ejabberd.log" \
        "${run[@]}" erl -noinput -noshell +K true +P 250000 -mnesia dir "\"$dir/spool\"" -s ejabberd \
        > "$dir/stdout" 2>&1) &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 600); do
        ss -ltn "sport = :$port" | grep -q LISTEN && break
        kill -0 "$pid" 2>/dev/null || { cat "$dir/stdout" "$dir"/*.log >&2; exit 1; }
        sleep 0.1
    done
    # The Erlang VM need not be $pid itself (it may run as its child): find it by its spool
    # directory, for its CPU time and memory, and stop it at the end too.
    local vm
    vm=$(pgrep -f "mnesia dir \"$dir/spool\"" | head -1)
    pids+=("$vm")
    eval "port_$name=$port pid_$name=$vm"
}

start_ejabberd memory '{}'
start_ejabberd stored '{mod_mam: {db_type: sql, default: always}}'
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "ejabberd $(dpkg-query -W -f='${Version}' ejabberd 2>/dev/null || echo '?'), Confidant $(git rev-parse --short HEAD)"

results="$work/results.jsonl"
tag() {  # tag SERVER: adds the shape and the server to the JSON line on stdin
    python3 -c 'import json, sys; row = json.loads(sys.stdin.read()); row.update(shape=sys.argv[1], server=sys.argv[2]); print(json.dumps(row))' \
        "$shape" "$1" >> "$results"
}
xmpp() {  # xmpp LABEL SERVER ARGS…
    local label=$1 server=$2
    shift 2
    local port pid
    eval "port=\$port_$server pid=\$pid_$server"
    python3 Benchmarks/xmpp_load.py --port "$port" --server-pid "$pid" "$@" | tag "$label"
}
confidant() {  # confidant ARGS…: the relay on SQLite, then (under with-postgres.sh) on PostgreSQL
    "$bin/relay-load" run --json "$@" | tag "Confidant (SQLite)"
    if [ -n "${CONFIDANT_TEST_POSTGRES_DATA:-}" ]; then
        local before
        before=$(postgres_cpu)
        "$bin/relay-load" run --json --database "$CONFIDANT_TEST_POSTGRES_URL" "$@" \
            | with_postgres_cpu "$before" | tag "Confidant (PostgreSQL)"
    fi
}
# PostgreSQL's CPU time (user + system, clock ticks) since its start: the postmaster, its live
# processes, and its exited ones (a backend's time goes to the postmaster's children's times when
# it is reaped; the relay's connections have closed when a run ends).
postgres_cpu() {
    local postmaster
    postmaster=$(head -1 "$CONFIDANT_TEST_POSTGRES_DATA/postmaster.pid")
    sleep 0.5  # the relay's backends exit and are reaped
    {
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"
        for child in $(pgrep -P "$postmaster"); do awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null || true; done
    } | awk '{ total += $1 } END { print total }'
}
with_postgres_cpu() {  # with_postgres_cpu BEFORE: adds PostgreSQL's CPU per message to the JSON line on stdin
    local row
    row=$(cat)
    python3 -c '
import json, os, sys
row = json.loads(sys.argv[1])
ticks = int(sys.argv[3]) - int(sys.argv[2])
per_message = ticks * 1_000_000 / os.sysconf("SC_CLK_TCK") / max(row["messages"], 1)
row["databaseCPUMicrosecondsPerMessage"] = per_message
row["serverCPUMicrosecondsPerMessage"] += per_message
print(json.dumps(row))' "$row" "$1" "$(postgres_cpu)"
}
kit() {  # kit ARGS…: the client's own path, sealing included; the receiver's chat closed
    "$bin/relay-load" kit --json --no-open-chat "$@" | tag "Confidant (SQLite), through ConfidantKit"
}
kit_chat() {  # kit_chat ARGS…: the same with the receiver's chat open (its ChatViewModel follows the store)
    "$bin/relay-load" kit --json --open-chat "$@" | tag "Confidant (SQLite), through ConfidantKit, chat open"
}
shapes=",${SHAPES:-pairs,one,eight,rate},"
for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    if [[ $shapes == *,pairs,* ]]; then
        shape="32 pairs, open loop"
        xmpp "ejabberd, in memory" memory --pairs 32 --messages 30000
        confidant --pairs 32 --messages 30000
        xmpp "ejabberd, archived to SQLite" stored --pairs 32 --messages 30000
    fi
    if [[ $shapes == *,one,* ]]; then
        shape="one sender, 1 in flight"
        confidant --pairs 1 --messages 2000 --window 1
        xmpp "ejabberd, in memory" memory --pairs 1 --messages 2000 --window 1
        kit --messages 1000
    fi
    if [[ $shapes == *,eight,* ]]; then
        shape="one sender, 8 in flight"
        xmpp "ejabberd, in memory" memory --pairs 1 --messages 8000 --window 8
        confidant --pairs 1 --messages 8000 --window 8
        kit --messages 1000 --window 8
    fi
    if [ "$round" = 1 ] && [[ $shapes == *,rate,* ]]; then
        shape="one sender at 50 messages/s for 20 s"
        xmpp "ejabberd, in memory" memory --pairs 1 --messages 1000 --rate 50
        confidant --pairs 1 --messages 1000 --rate 50
        kit --messages 1000 --rate 50
        kit_chat --messages 1000 --rate 50
    fi
done

python3 - "$results" <<'PY'
import json, os, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
groups = {}
for row in rows:
    groups.setdefault((row["shape"], row["server"]), []).append(row)
print("\nServer CPU on PostgreSQL includes PostgreSQL's processes (the relay alone: subtract the last column).")
print(f"\n| shape | server | runs | delivered msg/s | server CPU µs/msg | generator CPU µs/msg | p50 / p99 ms | server peak RSS MiB | lost / duplicated | PostgreSQL CPU µs/msg |")
print("|---|---|---:|---:|---:|---:|---|---:|---|---:|")
for (shape, server), runs in groups.items():
    m = lambda key: statistics.median(r[key] for r in runs)
    lost = sum(r.get("lost", 0) for r in runs)
    duplicated = sum(r.get("duplicated", 0) for r in runs)
    database = f"{m('databaseCPUMicrosecondsPerMessage'):.1f}" if "databaseCPUMicrosecondsPerMessage" in runs[0] else ""
    print(f"| {shape} | {server} | {len(runs)} | {m('deliveredPerSecond'):,.0f} | {m('serverCPUMicrosecondsPerMessage'):.1f} "
          f"| {m('generatorCPUMicrosecondsPerMessage'):.1f} | {m('p50Milliseconds'):.1f} / {m('p99Milliseconds'):.1f} "
          f"| {max(r['serverPeakRSSMiB'] for r in runs):.0f} | {lost} / {duplicated} | {database} |")
for (shape, server), runs in groups.items():
    if "sealMicrosecondsPerMessage" in runs[0]:
        m = lambda key: statistics.median(r[key] for r in runs)
        switches = (f", {m('clientContextSwitchesPerMessage'):.1f} context switches of their process"
                    if "clientContextSwitchesPerMessage" in runs[0] else "")
        opening = (f", opening alone {m('openMicrosecondsPerMessage'):.0f} µs"
                   if "openMicrosecondsPerMessage" in runs[0] else "")
        print(f"\n{server}, {shape}: the generator's CPU is both messengers' (sender and receiver, local "
              f"stores included); sealing alone {m('sealMicrosecondsPerMessage'):.0f} µs{opening}{switches} "
              f"per message.")
        if runs[0].get("shownInChat"):
            print(f"{server}, {shape}: send → in the receiver's open chat (its ChatViewModel), p50 / p99 "
                  f"{m('chatP50Milliseconds'):.1f} / {m('chatP99Milliseconds'):.1f} ms.")

# The goals (issue #25) as ratios to ejabberd's in-memory routing: each round's rate against
# ejabberd's in the same round (rows keep the rounds' order), so that the machine's speed, which
# changes within the hour, cancels; the median of those and their range.
reference = "ejabberd, in memory"
print("\nAgainst ejabberd in memory, round by round (the goals: ≥ 1.0×; 32 pairs also ≤ 30 µs of "
      "server CPU a message):")
for (shape, server), runs in groups.items():
    base = groups.get((shape, reference))
    if server == reference or not base or "rate" in shape:
        continue
    ratios = [r["deliveredPerSecond"] / b["deliveredPerSecond"] for r, b in zip(runs, base)]
    cpu = statistics.median(r["serverCPUMicrosecondsPerMessage"] for r in runs)
    spread = f" ({min(ratios):.3f}–{max(ratios):.3f})" if len(ratios) > 1 else ""
    print(f"- {shape}, {server}: {statistics.median(ratios):.3f}×{spread} over {len(ratios)} round(s), "
          f"{cpu:.1f} µs of server CPU a message")

# What matching ejabberd's rate leaves a path of CPU a message on this machine's processors,
# round by round: they give at most cores × 1 s of CPU a second, so a path delivering ejabberd's
# rate can spend at most cores ÷ that rate on each message (all of it in parallel; a chain of
# steps with 1 in flight gets less). Against it: what the same round's path spent (the relay and
# both messengers), and the part no client can leave out — sealing and opening (relay-load kit's
# MessageCryptoCost) — with the relay alone in the same shape (pre-sealed envelopes).
cores = os.cpu_count() or 1
kit = "Confidant (SQLite), through ConfidantKit"
budget_lines = []
for (shape, server), runs in groups.items():
    base = groups.get((shape, reference))
    relay = groups.get((shape, "Confidant (SQLite)"))
    if server != kit or not base or "rate" in shape or "openMicrosecondsPerMessage" not in runs[0]:
        continue
    budgets = [cores * 1e6 / b["deliveredPerSecond"] for b in base]
    spent = [r["serverCPUMicrosecondsPerMessage"] + r["generatorCPUMicrosecondsPerMessage"] for r in runs]
    crypto = [r["sealMicrosecondsPerMessage"] + r["openMicrosecondsPerMessage"] for r in runs]
    median = statistics.median
    line = (f"- {shape}: at ejabberd's rate {cores} cores leave {median(budgets):.0f} µs of CPU a message "
            f"({min(budgets):.0f}–{max(budgets):.0f}); ConfidantKit's path spent {median(spent):.0f} µs "
            f"({median(s / b for s, b in zip(spent, budgets)):.1f}× that), of which sealing and opening "
            f"{median(crypto):.0f} µs")
    if relay:
        alone = [r["serverCPUMicrosecondsPerMessage"] + r["generatorCPUMicrosecondsPerMessage"] for r in relay]
        line += f"; the relay alone with its pre-sealed generator {median(alone):.0f} µs"
    budget_lines.append(line)
if budget_lines:
    print("\nThe processors' budget at ejabberd's rate (cores ÷ its delivered rate, per round; medians):")
    print("\n".join(budget_lines))
PY

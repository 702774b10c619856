#!/usr/bin/env bash
# with-postgres.sh COMMAND…: starts a throw-away PostgreSQL cluster on a free loopback port in a
# temporary directory, runs COMMAND with CONFIDANT_TEST_POSTGRES_URL pointing at it, and removes
# the cluster afterwards. Without PostgreSQL installed, runs COMMAND without the variable.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [[ -z "$pg_bin" || ! -x "$pg_bin/initdb" ]]; then
    echo "PostgreSQL is not installed: running without it (apt-get install postgresql)." >&2
    exec "$@"
fi

cluster=$(mktemp -d /tmp/confidant-pg.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
as_postgres=()
if [[ $(id -u) == 0 ]]; then
    # PostgreSQL refuses to run as root.
    chown postgres "$cluster"
    as_postgres=(runuser -u postgres --)
fi
stop() {
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$cluster/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$cluster"
}
trap stop EXIT
"${as_postgres[@]}" "$pg_bin/initdb" -D "$cluster/data" -U confidant --auth=trust --no-sync >/dev/null
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$cluster/data" -l "$cluster/log" -w \
    -o "-p $port -k $cluster -c listen_addresses=127.0.0.1 -c fsync=${CONFIDANT_PG_FSYNC:-off} -c max_connections=300" start >/dev/null
export CONFIDANT_TEST_POSTGRES_URL="postgres://confidant@127.0.0.1:$port/postgres"
# Its data directory, for a benchmark that reads the server's process id (postmaster.pid).
export CONFIDANT_TEST_POSTGRES_DATA="$cluster/data"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
"$@"

#!/usr/bin/env bash
# postgres-cluster.sh start DIR | restart DIR | stop DIR — a throw-away PostgreSQL cluster of a
# test's own (the fault tests restart it under load, which the suite's shared cluster must not
# see). `start` prints the URL of its `postgres` database. Without PostgreSQL installed, exits 3.
set -euo pipefail
# Close every descriptor but the standard three: the database server would inherit them, and a
# caller that learns of this script's exit through one (Foundation's Process does, by a socket
# it leaves open in the child) would wait for the database to stop.
for fd in $(ls /proc/$$/fd); do
    [[ $fd -gt 2 ]] && eval "exec $fd>&-" 2>/dev/null || true
done
action=$1 dir=$2
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[[ -n "$pg_bin" && -x "$pg_bin/initdb" ]] || { echo "PostgreSQL is not installed" >&2; exit 3; }
as_postgres=()
[[ $(id -u) == 0 ]] && as_postgres=(runuser -u postgres --)
case "$action" in
start)
    mkdir -p "$dir"
    [[ $(id -u) == 0 ]] && chown postgres "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$dir/data" -U confidant --auth=trust --no-sync >/dev/null
    echo "$port" > "$dir/port"
    # The server must not inherit this script's output: a caller reading it to its end would wait
    # for the database to stop.
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start \
        </dev/null >/dev/null 2>&1
    echo "postgres://confidant@127.0.0.1:$port/postgres"
    ;;
restart)
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -m fast restart </dev/null >/dev/null 2>&1
    ;;
stop)
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: postgres-cluster.sh start|restart|stop DIR" >&2
    exit 2
    ;;
esac

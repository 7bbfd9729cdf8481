#!/usr/bin/env bash
# Try several workers on one machine: Redis, N workers of examples/booking.py and haproxy in front.
#
#   deploy/try.sh [N]           N workers (default 3, at most 9) behind haproxy; Ctrl-C stops everything
#   deploy/try.sh --nginx [N]   the same behind nginx (deploy/nginx.conf) instead of haproxy
#
# Everything listens on free loopback ports (127.0.0.1 only) and stops when this script ends: on
# Ctrl-C, on an error, or after TRY_SECONDS (default 3600). The workers share one freshly generated
# MINIMCP_STATE_KEYS, one Redis (no persistence), and the haproxy config of deploy/haproxy.cfg with
# one server line per worker (or deploy/nginx.conf with one map entry and upstream per worker). Needs
# redis-server and haproxy (or nginx) on PATH (Debian: apt-get install redis-server haproxy nginx)
# and minimcp with its http and redis extras importable by $PYTHON.
#
# Environment: PYTHON (default python3), BACKEND (asyncio or trio, default asyncio),
# TRY_SECONDS (default 3600), ELICITATION_TIMEOUT (seconds, default 300).
set -euo pipefail

BALANCER=haproxy
if [[ ${1:-} == --nginx ]]; then
    BALANCER=nginx
    shift
fi
N=${1:-3}
if ! [[ $N =~ ^[1-9]$ ]] || [[ $# -gt 1 ]]; then
    echo "usage: $0 [--nginx] [N]   (N workers, 1 to 9; haproxy in front, or nginx)" >&2
    exit 2
fi
PYTHON=${PYTHON:-python3}
BACKEND=${BACKEND:-asyncio}
TRY_SECONDS=${TRY_SECONDS:-3600}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
for tool in redis-server "$BALANCER" "$PYTHON"; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is not on PATH" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/minimcp-try.XXXXXX")
PIDS=()
cleanup() {
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
    echo "stopped everything this script started" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# N+2 distinct free loopback ports: Redis, haproxy, the workers.
read -r -a PORTS <<<"$("$PYTHON" - "$N" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]) + 2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
)"
REDIS_PORT=${PORTS[0]}
FRONT=${PORTS[1]}
WORKER_PORTS=("${PORTS[@]:2}")
KEYS=$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')

wait_port() {  # wait_port PORT PID WHAT: until PORT accepts connections (at most 60 s)
    for _ in $(seq 600); do
        kill -0 "$2" 2>/dev/null || { echo "$0: $3 exited" >&2; return 1; }
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$0: $3 did not listen on $1" >&2
    return 1
}

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port "$REDIS_PORT" $! redis-server

for k in $(seq "$N"); do
    MINIMCP_STATE_KEYS=$KEYS PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" \
        "$PYTHON" "$ROOT/examples/booking.py" --transport http --port "${WORKER_PORTS[k-1]}" \
        --backend "$BACKEND" --redis "redis://127.0.0.1:$REDIS_PORT/0" --worker-id "w$k" \
        --public-url "http://127.0.0.1:$FRONT" --elicitation-timeout "${ELICITATION_TIMEOUT:-300}" \
        </dev/null >/dev/null 2>"$WORK/w$k.log" &
    PIDS+=($!)
done
for k in $(seq "$N"); do
    wait_port "${WORKER_PORTS[k-1]}" "${PIDS[k]}" "worker w$k" || { cat "$WORK/w$k.log" >&2; exit 1; }
done

if [[ $BALANCER == haproxy ]]; then
    # deploy/haproxy.cfg with our ports, and one use-server and one server line per worker (no WebSocket
    # listeners: the workers serve Streamable HTTP only, an upgrade is answered 503).
    {
        sed -e "s/127\.0\.0\.1:8100/127.0.0.1:$FRONT/" \
            -e '/^[[:space:]]*use-server w[0-9]/d' -e '/^[[:space:]]*server ws\{0,1\}[0-9]/d' "$HERE/haproxy.cfg"
        for k in $(seq "$N"); do
            echo "    use-server w$k if { var(txn.worker) -m str w$k }"
            echo "    server w$k 127.0.0.1:${WORKER_PORTS[k-1]}"
        done
    } >"$WORK/haproxy.cfg"
    haproxy -db -f "$WORK/haproxy.cfg" >"$WORK/haproxy.log" 2>&1 &
    PIDS+=($!)
    wait_port "$FRONT" $! haproxy || { cat "$WORK/haproxy.log" >&2; exit 1; }
else
    # deploy/nginx.conf with our ports: one map entry, one server in the round robin and one upstream
    # per worker; its files (pid, temp directories) under $WORK/nginx, in the foreground.
    mkdir "$WORK/nginx"
    {
        sed -e "s/127\.0\.0\.1:8100/127.0.0.1:$FRONT/" \
            -e '/"~^w[0-9]\\\."/d' -e '/^[[:space:]]*server 127\.0\.0\.1:810[0-9];/d' \
            -e '/^[[:space:]]*upstream mcp_w[0-9] /d' "$HERE/nginx.conf"
    } | while IFS= read -r line; do
        printf '%s\n' "$line"
        if [[ $line =~ ^[[:space:]]*default[[:space:]]+mcp_any\; ]]; then
            for k in $(seq "$N"); do printf '        "~^w%s\\."     mcp_w%s;\n' "$k" "$k"; done
        elif [[ $line =~ ^[[:space:]]*upstream[[:space:]]+mcp_any ]]; then
            for k in $(seq "$N"); do printf '        server 127.0.0.1:%s;\n' "${WORKER_PORTS[k-1]}"; done
        elif [[ $line =~ ^[[:space:]]*\#\ the\ worker\ either\ way ]]; then
            for k in $(seq "$N"); do
                printf '    upstream mcp_w%s { server 127.0.0.1:%s; keepalive 8; }\n' "$k" "${WORKER_PORTS[k-1]}"
            done
        fi
    done >"$WORK/nginx/nginx.conf"
    nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >"$WORK/nginx.log" 2>&1 &
    PIDS+=($!)
    wait_port "$FRONT" $! nginx || { cat "$WORK/nginx.log" >&2; exit 1; }
fi

echo "MCP endpoint: http://127.0.0.1:$FRONT/mcp   ($N worker(s) on $BACKEND behind $BALANCER, Redis on $REDIS_PORT)"
echo "logs: $WORK (removed on exit); stopping in $TRY_SECONDS s or on Ctrl-C"
sleep "$TRY_SECONDS" &
PIDS+=($!)
wait $!

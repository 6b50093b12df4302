#!/usr/bin/env bash
# gzip cost: ringfront against nginx, both compressing the same 16 KiB text body
# (`gzip on; gzip_comp_level LEVEL; gzip_types text/plain;`) proxied from the same nginx
# backend, wrk sending `Accept-Encoding: gzip`. Each proxy is one worker pinned to
# PROXY_CPU; the backend and wrk share CLIENT_CPU. CPU per request from /proc/PID/stat
# (utime + stime, all threads) around each run; ROUNDS short runs of each, interleaved
# (ringfront nginx nginx ringfront ...), medians and the per-round ratio ringfront/nginx.
# Each proxy's answer is checked first: gzip-encoded, and decompressing to the backend's
# body.
#
# Usage: [RINGFRONT_BIN=target/release/ringfront] [LEVEL=1] [ROUNDS=6] [DURATION=5]
#        [CONNS=50] [SIZE=16384] [PROXY_CPU=0] [CLIENT_CPU=1] [BACKEND_PORT=19500]
#        [RINGFRONT_PORT=18581] [NGINX_PORT=18582] bash loadtest/gzip.sh
# Only loopback addresses are used; every process started here is stopped on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=gzip
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
LEVEL=${LEVEL:-1} ROUNDS=${ROUNDS:-6} DURATION=${DURATION:-5} CONNS=${CONNS:-50}
SIZE=${SIZE:-16384} PROXY_CPU=${PROXY_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
BACKEND_PORT=${BACKEND_PORT:-19500}
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18581} [nginx]=${NGINX_PORT:-18582}) PID=()
[[ -x $RINGFRONT_BIN ]] || die "no ringfront binary at $RINGFRONT_BIN (cargo build --release -p ringfront)"
for p in "$BACKEND_PORT" "${PORT[@]}"; do port_free "$p" || die "port $p is taken"; done
OUT=$(mktemp -d)
cleanup() { kill "${PID[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

# A text body as an application log or a page of text gives: words that repeat, numbers
# that do not.
mkdir -p "$OUT/www"
awk -v n="$SIZE" 'BEGIN { srand(7); while (len < n) { s = sprintf("%06d GET /api/v1/items/%d 200 %d ms upstream=10.0.%d.%d\n", i++, int(rand() * 100000), int(rand() * 900), int(rand() * 4), int(rand() * 250)); if (len + length(s) > n) s = substr(s, 1, n - len); printf "%s", s; len += length(s) } }' >"$OUT/www/body.txt"

cat >"$OUT/backend.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $OUT/backend.pid;
error_log $OUT/backend.err warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000; default_type text/plain;
  server { listen 127.0.0.1:$BACKEND_PORT; root $OUT/www; } }
CONF
taskset -c "$CLIENT_CPU" /usr/sbin/nginx -p "$OUT/" -c "$OUT/backend.conf" -e "$OUT/backend.err" &
PID[backend]=$!

HTTP_BLOCK="keepalive_requests 1000000; access_log off;
    gzip on; gzip_comp_level $LEVEL; gzip_types text/plain;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; }"
cat >"$OUT/ringfront.conf" <<CONF
worker_processes 1;
events { worker_connections 1024; }
http {
    $HTTP_BLOCK
    server { listen 127.0.0.1:${PORT[ringfront]}; location / { proxy_pass http://b;
        proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
cat >"$OUT/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $OUT/nginx.pid;
error_log $OUT/nginx.err warn;
events { worker_connections 1024; }
http {
    $HTTP_BLOCK
    server { listen 127.0.0.1:${PORT[nginx]};
        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
CONF
taskset -c "$PROXY_CPU" "$RINGFRONT_BIN" -c "$OUT/ringfront.conf" --workers 1 \
    --cpu-affinity "$PROXY_CPU" 2>"$OUT/ringfront.err" &
PID[ringfront]=$!
taskset -c "$PROXY_CPU" /usr/sbin/nginx -p "$OUT/" -c "$OUT/nginx.conf" -e "$OUT/nginx.err" &
PID[nginx]=$!

for v in ringfront nginx; do
    ok=
    for _ in $(seq 100); do
        if curl -sf -H 'Accept-Encoding: gzip' -D "$OUT/$v.head" -o "$OUT/$v.gz" \
            "http://127.0.0.1:${PORT[$v]}/body.txt"; then ok=1; break; fi
        sleep 0.1
    done
    [[ -n $ok ]] || die "$v does not answer"
    grep -qi '^content-encoding: gzip' "$OUT/$v.head" || die "$v did not compress"
    gzip -dc "$OUT/$v.gz" | cmp -s - "$OUT/www/body.txt" || die "$v: body differs"
    log "$v: $SIZE bytes -> $(stat -c %s "$OUT/$v.gz") gzip bytes at level $LEVEL"
done

cpu() { local s; s=$(<"/proc/$1/stat"); awk '{ print $12 + $13 }' <<<"${s##*) }"; }
TCK=$(getconf CLK_TCK)
run() { # prints µs of CPU per request
    local v=$1 c0 c1 n
    c0=$(cpu "${PID[$v]}")
    n=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" -H 'Accept-Encoding: gzip' \
        "http://127.0.0.1:${PORT[$v]}/body.txt" | awk '/requests in/ { print $1 }')
    c1=$(cpu "${PID[$v]}")
    awk -v c=$((c1 - c0)) -v n="$n" -v t="$TCK" 'BEGIN { printf "%.2f\n", c / t * 1e6 / n }'
}
run ringfront >/dev/null; run nginx >/dev/null # warm-up
declare -a RR=() RN=() RATIO=()
for ((i = 0; i < ROUNDS; i++)); do
    if ((i % 2 == 0)); then r=$(run ringfront); n=$(run nginx); else n=$(run nginx); r=$(run ringfront); fi
    RR+=("$r"); RN+=("$n"); RATIO+=("$(awk -v a="$n" -v b="$r" 'BEGIN { printf "%.3f", b / a }')")
    echo "round $((i + 1)): ringfront $r µs/req, nginx $n µs/req, ringfront/nginx ${RATIO[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median: ringfront $(median "${RR[@]}") µs/req, nginx $(median "${RN[@]}") µs/req, ringfront/nginx $(median "${RATIO[@]}") (level $LEVEL, $SIZE-byte body, rounds: $ROUNDS x ${DURATION}s, $CONNS conns)"

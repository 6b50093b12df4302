#!/usr/bin/env bash
# How many requests reach a dead backend before every worker stops using it: ringfront
# (health shared by all workers) vs nginx without `zone` (each worker process counts its own
# failures), for WORKERS_LIST worker counts and MAX_FAILS_LIST values of max_fails.
#
# Per run: an upstream of two live demo backends and one closed port (the dead peer, with
# `max_fails=M fail_timeout=60s`), the proxy with N workers, `wrk -t2 -c64 -dDURATION`
# through it; the dead peer's attempts are the error-log lines "connect() failed ...
# Connection refused" naming its port (both proxies log nginx's line). nginx is expected to
# need N x M attempts (every worker learns alone), ringfront M (plus the tries that were
# already in flight in other workers when the M-th failure landed).
#
# Knobs: WORKERS_LIST="1 2 4", MAX_FAILS_LIST="1 3", DURATION=2, PROXIES="ringfront nginx",
# RINGFRONT_BIN (default target/release/ringfront), DEMO_BACKEND_BIN, PORT_BASE=19500.
# Output: a table on stdout and in loadtest/out/ejection.md.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/loadtest/out/ejection"
WORKERS_LIST=${WORKERS_LIST:-1 2 4}
MAX_FAILS_LIST=${MAX_FAILS_LIST:-1 3}
DURATION=${DURATION:-2}
PROXIES=${PROXIES:-ringfront nginx}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
DEMO_BACKEND_BIN=${DEMO_BACKEND_BIN:-$ROOT/target/release/demo-backend}
NGINX=${NGINX:-/usr/sbin/nginx}
BASE=${PORT_BASE:-19500}
GOOD1=$BASE GOOD2=$((BASE + 1)) DEAD=$((BASE + 2)) LISTEN=$((BASE + 3))

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
LOG_TAG=ejection
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
for b in "$RINGFRONT_BIN" "$DEMO_BACKEND_BIN" "$NGINX"; do [[ -x $b ]] || die "missing $b"; done
command -v wrk >/dev/null || die "wrk not found"
for p in $GOOD1 $GOOD2 $DEAD $LISTEN; do port_free "$p" || die "port $p is taken"; done

rm -rf "$OUT"; mkdir -p "$OUT"
"$DEMO_BACKEND_BIN" --port "$GOOD1" --port "$GOOD2" >"$OUT/backend.log" 2>&1 &
PIDS+=($!)

wait_ready() {
    for _ in $(seq 100); do
        curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$LISTEN/" && return 0
        sleep 0.05
    done
    return 1
}

run() { # proxy workers max_fails -> prints the dead peer's attempts
    local proxy=$1 n=$2 m=$3 dir="$OUT/$1-w$2-m$3" pid
    mkdir -p "$dir"
    cat >"$dir/proxy.conf" <<CONF
worker_processes $n;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    upstream backend {
        server 127.0.0.1:$DEAD max_fails=$m fail_timeout=60s;
        server 127.0.0.1:$GOOD1 max_fails=$m fail_timeout=60s;
        server 127.0.0.1:$GOOD2 max_fails=$m fail_timeout=60s;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$LISTEN reuseport;
        location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
CONF
    if [[ $proxy == nginx ]]; then
        "$NGINX" -p "$dir" -c "$dir/proxy.conf" 2>>"$dir/stderr.log" &
    else
        sed -i '/^daemon off;/d; /^pid /d' "$dir/proxy.conf"
        "$RINGFRONT_BIN" -c "$dir/proxy.conf" 2>>"$dir/stderr.log" &
    fi
    pid=$!
    wait_ready || die "$proxy did not start (see $dir)"
    wrk -t2 -c64 -d"${DURATION}s" "http://127.0.0.1:$LISTEN/" >"$dir/wrk.txt" 2>&1
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -c "connect() failed.*127.0.0.1:$DEAD" "$dir/error.log" || true
}

{
    echo "| proxy | workers | max_fails | dead-peer attempts | expected without sharing |"
    echo "|---|---|---|---|---|"
    for m in $MAX_FAILS_LIST; do
        for n in $WORKERS_LIST; do
            for proxy in $PROXIES; do
                echo "| $proxy | $n | $m | $(run "$proxy" "$n" "$m") | $((n * m)) |"
            done
        done
    done
} | tee "$OUT/../ejection.md"

#!/usr/bin/env bash
# User-space instructions per request, counted by valgrind's callgrind: the one cost figure
# this shared, noisy machine gives the same way every run (CPU time moves by ±20 % from
# round to round; an instruction count does not move with the neighbours). Each proxy runs
# one worker under callgrind in front of the same backend (nginx, not under valgrind);
# after a warm-up the counters are zeroed, wrk drives DURATION seconds, the counters are
# dumped, and the instructions of every thread of the proxy are divided by the requests wrk
# completed. Kernel work (TCP, the ring) is not counted: this is the user-space row of
# issue 13's table, measured exactly; CPU time per request stays loadtest/run.sh's.
#
# Usage: [PROXIES="ringfront nginx relay"] (also relay-http) [SHAPE=keepalive|close|body64k|post4k] [CONNS=50]
#        [ACCESS_LOG=1] [FORWARDED=1] [EXTRA="directives"] (loadtest/lib.sh) [BROWSER=1]
#        [DURATION=10] [RINGFRONT_BIN=target/release/ringfront]
#        [RELAY_BIN=target/release/ringfront-floor-relay] [TOP=0] [KEEP=DIR] [CACHE=0]
#        bash loadtest/instructions.sh
# CACHE=1 adds callgrind's cache simulation (L1 32 KiB each, 8-way; last level 1 MiB, 16-way)
# and two columns: L1 instruction misses and L1 data misses (reads + writes) per request.
# TOP=N also prints each proxy's N costliest functions (exclusive instructions per request);
# KEEP=DIR keeps the callgrind files there (for callgrind_annotate FILE SOURCE.rs per line).
# Needs valgrind (apt-get install valgrind), nginx and wrk.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=instructions
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
PROXIES=${PROXIES:-ringfront nginx relay} SHAPE=${SHAPE:-keepalive}
DURATION=${DURATION:-10} TOP=${TOP:-0} KEEP=${KEEP:-} CACHE=${CACHE:-0}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
RELAY_BIN=${RELAY_BIN:-$ROOT/target/release/ringfront-floor-relay}
BACKEND_PORT=${BACKEND_PORT:-19300} PORT=${PORT:-18300}
case $SHAPE in
keepalive) CONNS=${CONNS:-50} HDR=() URL_PATH=/ ;;
close) CONNS=${CONNS:-16} HDR=(-H 'Connection: close') URL_PATH=/ ;;
body64k) CONNS=${CONNS:-16} HDR=() URL_PATH=/64k ;;
# POSTs with 4 KiB bodies (loadtest/tail.lua sends them; run.sh's post4k).
post4k) CONNS=${CONNS:-50} HDR=(-s "$ROOT/loadtest/tail.lua") URL_PATH=/ && export WRK_POST_BYTES=4096 ;;
*) die "unknown SHAPE '$SHAPE'" ;;
esac
# BROWSER=1: every request carries the fields a desktop browser sends (13 fields, ~900 bytes).
if [[ ${BROWSER:-0} == 1 ]]; then
    HDR+=(-H 'User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
        -H 'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'
        -H 'Accept-Language: en-US,en;q=0.9,de;q=0.8' -H 'Accept-Encoding: gzip, deflate, br, zstd'
        -H 'Referer: https://www.example.com/articles/2026/12/some-long-article-name?utm_source=feed'
        -H 'Cookie: session=3f9a1c0e7b2d4a6f8e1c3b5d7a9f0e2c; prefs=theme%3Ddark%26lang%3Den; _ga=GA1.2.1234567890.1700000000'
        -H 'Sec-Fetch-Dest: document' -H 'Sec-Fetch-Mode: navigate' -H 'Sec-Fetch-Site: same-origin'
        -H 'Sec-Fetch-User: ?1' -H 'Upgrade-Insecure-Requests: 1' -H 'Cache-Control: max-age=0'
        -H 'sec-ch-ua: "Chromium";v="131", "Not_A Brand";v="24"')
fi
command -v valgrind >/dev/null || die "needs valgrind: apt-get install -y valgrind"
start_scratch_backend

for p in $PROXIES; do command_of "$p" >/dev/null; done
SIM=()
if ((CACHE)); then
    SIM=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64)
    echo "| proxy | requests | user-space instructions / request | L1i misses / request | L1d misses / request |"
    echo "|---|---:|---:|---:|---:|"
else
    echo "| proxy | requests | user-space instructions / request |"
    echo "|---|---:|---:|"
fi
for p in $PROXIES; do
    # shellcheck disable=SC2046 # the command line is split on purpose
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$p.cg" --dump-instr=no "${SIM[@]}" \
        $(command_of "$p") >"$OUT/$p.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_serving "$p" "$OUT/$p.log" 200
    wrk -t1 -c"$CONNS" -d3s "${HDR[@]}" "http://127.0.0.1:$PORT$URL_PATH" >/dev/null
    callgrind_control -z "$pid" >/dev/null
    wrk -t1 -c"$CONNS" -d"${DURATION}s" "${HDR[@]}" "http://127.0.0.1:$PORT$URL_PATH" >"$OUT/$p.wrk"
    callgrind_control -d "$pid" >/dev/null
    # Counted already (the dump); nothing after it is wanted.
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    requests=$(awk '/requests in/ {print $1}' "$OUT/$p.wrk")
    # The dump after zeroing: the files callgrind_control -d wrote (one per thread or one).
    # Columns by the names on the "Events shown:" line (Ir; with the simulation I1mr, D1mr, D1mw).
    total=0 i1=0 d1=0
    for f in "$OUT/$p.cg".*; do
        read -r n a b c < <(callgrind_annotate --threshold=100 --auto=no --show-percs=no "$f" 2>/dev/null |
            awk '/^Events shown:/ { for (i = 3; i <= NF; i++) col[$i] = i - 2 }
                /PROGRAM TOTALS/ {
                    gsub(",", "")
                    print $col["Ir"], col["I1mr"] ? $col["I1mr"] : 0,
                        col["D1mr"] ? $col["D1mr"] : 0, col["D1mw"] ? $col["D1mw"] : 0 }')
        total=$((total + ${n:-0})) i1=$((i1 + ${a:-0})) d1=$((d1 + ${b:-0} + ${c:-0}))
    done
    if ((CACHE)); then
        echo "| $p | $requests | $((total / requests)) | $((i1 / requests)) | $((d1 / requests)) |"
    else
        echo "| $p | $requests | $((total / requests)) |"
    fi
    if [[ -n $KEEP ]]; then mkdir -p "$KEEP" && cp "$OUT/$p.cg".* "$KEEP/"; fi
    if ((TOP > 0)); then
        for f in "$OUT/$p.cg".*; do
            callgrind_annotate --threshold=100 --auto=no "$f" 2>/dev/null |
                awk -v n="$requests" -v top="$TOP" '
                    /^ *[0-9,]+ \( *[0-9.]+%\) / && !/PROGRAM/ {
                        v = $1; gsub(",", "", v); fn = $0
                        sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, "", fn); sub(/^[^:]*:/, "", fn)
                        sub(/ \[[^]]*\]$/, "", fn); sum[fn] += v
                    }
                    END { for (k in sum) printf "%8.0f %s\n", sum[k] / n, k }' |
                sort -rn | grep -v -E 'clone|start_thread|thread_start|call_once' | head -n "$TOP"
        done
    fi
done

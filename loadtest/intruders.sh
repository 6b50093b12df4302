#!/usr/bin/env bash
# What else runs on the proxy's core while wrk drives it: the keep-alive shape of run.sh
# (one worker pinned to core PROXY_CPU, the backend and wrk on CLIENT_CPU), with
# sched:sched_switch recorded on the proxy's core for RECORD seconds in the middle of each
# run. Prints, per proxy, the latency tail (loadtest/tail.lua) and loadtest/intruders.py's
# account: how often the proxy was preempted and which tasks took the core. On a shared
# machine this tells a proxy's own tail from other processes' turns on its core.
#
# Usage: [PROXIES="ringfront nginx relay"] [DURATION=6] [RECORD=3] [CONNS=50]
#        [ROUNDS=1] [PROXY_CPU=0] [CLIENT_CPU=1] bash loadtest/intruders.sh
# Needs perf, nginx, wrk, curl; builds nothing (target/release/ringfront and the relay must exist).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=intruders
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
PROXIES=${PROXIES:-ringfront nginx relay} DURATION=${DURATION:-6} RECORD=${RECORD:-3}
CONNS=${CONNS:-50} ROUNDS=${ROUNDS:-1} PROXY_CPU=${PROXY_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
RELAY_BIN=${RELAY_BIN:-$ROOT/target/release/ringfront-floor-relay}
BACKEND_PORT=${BACKEND_PORT:-19400} PORT=${PORT:-18400}
command -v perf >/dev/null || die "needs perf"
((RECORD + 1 < DURATION)) || die "RECORD must be at least 2 s shorter than DURATION"
start_scratch_backend "$CLIENT_CPU"
for r in $(seq "$ROUNDS"); do
    for p in $PROXIES; do
        # shellcheck disable=SC2046
        taskset -c "$PROXY_CPU" $(command_of "$p") >"$OUT/$p.log" 2>&1 &
        pid=$!
        PIDS+=("$pid")
        wait_serving "$p" "$OUT/$p.log" 100
        taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d2 "http://127.0.0.1:$PORT/" >/dev/null
        taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" -s "$ROOT/loadtest/tail.lua" \
            "http://127.0.0.1:$PORT/" >"$OUT/$p.wrk" &
        wrk_pid=$!
        sleep 1
        taskset -c "$CLIENT_CPU" perf record -q -e sched:sched_switch -C "$PROXY_CPU" \
            -o "$OUT/$p.data" -- sleep "$RECORD" 2>/dev/null
        wait "$wrk_pid"
        echo "## $p (round $r): $(grep tail_us "$OUT/$p.wrk" | cut -d' ' -f2-)"
        perf script -i "$OUT/$p.data" -F time,event,trace 2>/dev/null >"$OUT/$p.txt"
        prefix=$p
        [[ $p == relay* ]] && prefix=ringfront-floor
        python3 "$ROOT/loadtest/intruders.py" "$OUT/$p.txt" "${prefix:0:15}"
        stop_all "$pid"
    done
done

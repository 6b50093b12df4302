#!/usr/bin/env bash
# The latency tail seen from inside each proxy: the keep-alive shape of run.sh (one worker
# pinned to PROXY_CPU, the backend and wrk on CLIENT_CPU), each proxy logging
# `$request_time $upstream_response_time` for every request (lib.sh, ACCESS_LOG=timing).
# Prints, per run, wrk's p98 and p99 beside the share of requests whose time inside the
# proxy (from its head read to its log line, millisecond resolution) reached 1, 2 and 4 ms.
# A tail that wrk sees and the log does not is made outside the proxy's request: in socket
# queues, in the client, on the core that the client and the backend share.
# nginx's $request_time comes from its cached clock (updated once per event-loop turn), so
# its 1 ms share counts requests that crossed a millisecond; compare the 2 ms shares.
#
# Usage: [PROXIES="ringfront nginx"] [DURATION=5] [ROUNDS=3] [CONNS=50] [PROXY_CPU=0]
#        [CLIENT_CPU=1] [RINGFRONT_BIN=target/release/ringfront] bash loadtest/inside.sh
# Needs nginx, wrk, curl; builds nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=inside
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
PROXIES=${PROXIES:-ringfront nginx} DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50} PROXY_CPU=${PROXY_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
BACKEND_PORT=${BACKEND_PORT:-19500} PORT=${PORT:-18500}
ACCESS_LOG=timing start_scratch_backend "$CLIENT_CPU"
echo "| proxy | round | requests | lines logged | wrk p98 µs | wrk p99 µs | inside ≥ 1 ms | ≥ 2 ms | ≥ 4 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
    for p in $PROXIES; do
        log="$OUT/$p-access.log"
        # shellcheck disable=SC2046 # the command line is split on purpose
        taskset -c "$PROXY_CPU" $(command_of "$p") >"$OUT/$p.log" 2>&1 &
        pid=$!
        PIDS+=("$pid")
        wait_serving "$p" "$OUT/$p.log" 100
        taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d2 "http://127.0.0.1:$PORT/" >/dev/null
        : >"$log"
        taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency \
            -s "$ROOT/loadtest/tail.lua" "http://127.0.0.1:$PORT/" >"$OUT/$p.wrk"
        # Stopped first, so that every line is in the log (ringfront's log thread writes in batches).
        stop_all "$pid"
        IFS=, read -r requests p98 p99 < <(wrk_fields "$OUT/$p.wrk" requests p98_us p99_us)
        awk -v p="$p" -v r="$r" -v n="$requests" -v p98="$p98" -v p99="$p99" '
            { t = int($1 * 1000 + 0.5); a += (t >= 1); b += (t >= 2); c += (t >= 4); lines++ }
            END { printf "| %s | %d | %d | %d | %s | %s | %.3f %% | %.3f %% | %.3f %% |\n",
                  p, r, n, lines, p98, p99, 100 * a / lines, 100 * b / lines, 100 * c / lines }' "$log"
        : >"$log"
    done
done

#!/usr/bin/env bash
# Kernel operations per request: system calls, io_uring_enter calls, ring submissions and
# completions, poll arms (an operation the kernel could not finish at once and parked on a
# wait queue), epoll calls. Counted with perf's tracepoints on the pinned proxy's threads
# while wrk drives it; like loadtest/instructions.sh an exact count, not a noisy time. It
# shows how close a proxy's kernel side is to the floor of its design (a keep-alive request
# needs four socket operations: receive the client's, send upstream, receive the answer,
# send it back).
#
# Usage: [PROXIES="ringfront nginx relay"] [SHAPE=keepalive|close] [CONNS=50] [DURATION=5]
#        [RINGFRONT_BIN=target/release/ringfront] [RELAY_BIN=target/release/ringfront-floor-relay]
#        bash loadtest/ops.sh
# Needs perf with tracepoint access (root), nginx and wrk; 2+ CPUs (proxy on core 0;
# backend and wrk on core 1).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=ops
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
PROXIES=${PROXIES:-ringfront nginx relay} SHAPE=${SHAPE:-keepalive} DURATION=${DURATION:-5}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
RELAY_BIN=${RELAY_BIN:-$ROOT/target/release/ringfront-floor-relay}
BACKEND_PORT=${BACKEND_PORT:-19400} PORT=${PORT:-18400}
case $SHAPE in
keepalive) CONNS=${CONNS:-50} HDR=() ;;
close) CONNS=${CONNS:-16} HDR=(-H 'Connection: close') ;;
*) die "unknown SHAPE '$SHAPE'" ;;
esac
command -v perf >/dev/null || die "needs perf"
EVENTS=(raw_syscalls:sys_enter syscalls:sys_enter_io_uring_enter io_uring:io_uring_submit_req
    io_uring:io_uring_complete io_uring:io_uring_poll_arm syscalls:sys_enter_epoll_wait
    syscalls:sys_enter_epoll_ctl)
KNOWN=$(perf list tracepoint 2>/dev/null)
for e in "${EVENTS[@]}"; do
    grep -q " $e " <<<"$KNOWN" || die "perf lacks the tracepoint $e (run as root)"
done
start_scratch_backend 1

for p in $PROXIES; do command_of "$p" >/dev/null; done
echo "Per request, $SHAPE, $CONNS connections (wrk -t1 -d${DURATION}s on core 1, proxy on core 0):"
echo
echo "| proxy | requests | syscalls | io_uring_enter | ring submissions | ring completions | poll arms | epoll_wait | epoll_ctl |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for p in $PROXIES; do
    # shellcheck disable=SC2046 # the command line is split on purpose
    taskset -c 0 $(command_of "$p") >"$OUT/$p.log" 2>&1 &
    pid=$!
    wait_serving "$p" "$OUT/$p.log" 100
    taskset -c 1 wrk -t1 -c"$CONNS" -d2s "${HDR[@]}" "http://127.0.0.1:$PORT/" >/dev/null
    # perf attaches first; wrk's requests all fall inside its window.
    perf stat -x, -o "$OUT/$p.perf" $(printf -- '-e %s ' "${EVENTS[@]}") -p "$pid" \
        -- sleep $((DURATION + 2)) &
    perf_pid=$!
    sleep 0.5
    taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" "${HDR[@]}" \
        "http://127.0.0.1:$PORT/" >"$OUT/$p.wrk"
    wait "$perf_pid"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    requests=$(awk '/requests in/ {print $1}' "$OUT/$p.wrk")
    row=$(awk -F, -v n="$requests" '$3 ~ /:/ {c[$3] = $1}
        END {
            split("raw_syscalls:sys_enter syscalls:sys_enter_io_uring_enter io_uring:io_uring_submit_req io_uring:io_uring_complete io_uring:io_uring_poll_arm syscalls:sys_enter_epoll_wait syscalls:sys_enter_epoll_ctl", k, " ")
            for (i = 1; i <= 7; i++) printf " %.2f |", c[k[i]] / n
        }' "$OUT/$p.perf")
    echo "| $p | $requests |$row"
done

#!/usr/bin/env bash
# A burst of new clients on a warm proxy: where the latency tail of many connections comes
# from. Each proxy starts afresh (one worker pinned to core 0; the backend and wrk on core 1),
# is warmed for 2 s with 50 keep-alive connections, and then takes CONNS new keep-alive
# connections at once for DURATION seconds. Printed per run: the proxy's listen queue
# (`ss` Recv-Q, connections the kernel holds that the proxy has not accepted yet) every
# 100 ms for the first 3 s, wrk's throughput and latency tail, the proxy's CPU per request,
# the connections any listener dropped for a full queue meanwhile (TcpExt ListenDrops:
# each such SYN is sent again a second later), and the connections opened besides wrk's
# (the proxy's to the backend: its pool's churn). BACKLOG sets the backend's listen queue
# (nginx's default, 511, unless given); KEEPALIVE the proxies' `keepalive` (idle upstream
# connections kept, 64 as in run.sh unless given).
#
# Usage: [PROXIES="ringfront nginx"] [RUNS=3] [CONNS=1000] [DURATION=5] [BACKLOG=511]
#        [KEEPALIVE=64] [RINGFRONT_BIN=target/release/ringfront] bash loadtest/burst.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=burst
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
PROXIES=${PROXIES:-ringfront nginx} RUNS=${RUNS:-3} CONNS=${CONNS:-1000} DURATION=${DURATION:-5}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
RELAY_BIN=${RELAY_BIN:-$ROOT/target/release/ringfront-floor-relay}
BACKEND_PORT=${BACKEND_PORT:-19400} PORT=${PORT:-18400}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
OUT=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$OUT"' EXIT
write_backend_conf "$OUT" "$BACKEND_PORT"
write_proxy_confs "$OUT" "$PORT" "$BACKEND_PORT"
# The backend with its listen queue set; the proxies with room for the burst.
sed -i "s/listen 127.0.0.1:$BACKEND_PORT;/listen 127.0.0.1:$BACKEND_PORT backlog=${BACKLOG:-511};/" "$OUT/backend.conf"
taskset -c 1 /usr/sbin/nginx -p "$OUT/" -c "$OUT/backend.conf" -e "$OUT/backend.err" &
PIDS+=($!)
sed -i -e 's/worker_connections 1024/worker_connections 30000/' -e "s/keepalive 64;/keepalive ${KEEPALIVE:-64};/" \
    -e "s/listen 127.0.0.1:$PORT;/listen 127.0.0.1:$PORT backlog=16384;/" "$OUT/ringfront.conf" "$OUT/nginx.conf"
sed -i 's/^worker_processes 1;/worker_processes 1; worker_rlimit_nofile 65536;/' "$OUT/ringfront.conf"

drops() { net_counter /proc/net/netstat TcpExt ListenDrops; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# TCP connections opened on this machine so far (Tcp ActiveOpens): wrk's and the proxy's.
opens() { net_counter /proc/net/snmp Tcp ActiveOpens; }

echo "| proxy | run | listen queue, every 100 ms | requests/s | p98 | p99.9 | wrk timeouts | CPU µs/req | SYNs dropped | upstream connections opened |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for p in $PROXIES; do
    for r in $(seq "$RUNS"); do
        # shellcheck disable=SC2046
        taskset -c 0 $(command_of "$p") >"$OUT/$p.log" 2>&1 &
        pid=$!
        wait_serving "$p" "$OUT/$p.log" 50
        taskset -c 1 wrk -t1 -c50 -d2s "http://127.0.0.1:$PORT/" >/dev/null 2>&1
        d0=$(drops) t0=$(ticks "$pid") o0=$(opens)
        (for _ in $(seq 30); do ss -ltnH "sport = :$PORT" | awk '{ printf "%s ", $2 }'; sleep 0.1; done) >"$OUT/queue" &
        q=$!
        taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$ROOT/loadtest/tail.lua" \
            "http://127.0.0.1:$PORT/" >"$OUT/wrk.txt" 2>&1 || true
        t1=$(ticks "$pid") d1=$(drops) o1=$(opens)
        wait "$q"
        stop_all "$pid"
        python3 - "$OUT/wrk.txt" "$((t1 - t0))" "$(getconf CLK_TCK)" <<PY
import re, sys
w = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", w).group(1))
t = dict(kv.split("=") for kv in re.search(r"tail_us (.*)", w).group(1).split())
to = re.search(r"timeout (\d+)", w)
cpu = int(sys.argv[2]) / int(sys.argv[3]) * 1e6 / n
rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", w).group(1))
q = open("$OUT/queue").read().split()
queue = " ".join(q[:15]) + (" …" if any(v != "0" for v in q[15:]) else "")
print(f"| $p | $r | {queue} | {rps:,.0f} | {int(t['p98']) / 1000:.0f} ms | {int(t['p999']) / 1000:.0f} ms "
      f"| {to.group(1) if to else 0} | {cpu:.2f} | {$d1 - $d0} | {$o1 - $o0 - $CONNS:,} |")
PY
    done
done

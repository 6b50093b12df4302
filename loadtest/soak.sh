#!/usr/bin/env bash
# Soak and memory benchmark: ringfront vs nginx (issue 5, "Soak and memory").
#
# Part 1 — memory per idle keep-alive client connection, ringfront and nginx side by side.
#   Each proxy runs as ONE process with one worker (`master_process off` for nginx), pinned
#   to PROXY_CPU, `worker_connections 20000`, `keepalive_timeout 300s`, `keepalive_requests
#   1000000`, in front of one nginx backend (`return 200` from memory) on CLIENT_CPU. A
#   Python client (also on CLIENT_CPU) opens IDLE_CONNS connections in batches of
#   IDLE_BATCH, sends one small keep-alive GET on each and reads its whole response, so
#   every connection has served a request and now sits idle in keep-alive. The proxy's
#   VmRSS (/proc/PID/status) is read before and after (SETTLE seconds later); the table
#   shows (after - before) / IDLE_CONNS in bytes. The client also checks that every
#   connection is still open (no EOF) when RSS is read and that the proxy holds one more
#   descriptor per connection (/proc/PID/fd), then closes them and RSS is read once more.
#
# Part 2 — leak check under load. ringfront (one worker on PROXY_CPU) in front of three
#   demo backends (`demo-backend`, one process each, on CLIENT_CPU) with
#   `taskset -c CLIENT_CPU wrk -t1 -c50 -dSOAK_SECONDS`; at SOAK_SECONDS/2 the third backend
#   is killed (SIGKILL), so the second half runs with a failing peer (connection refused,
#   redispatch to the other two). ringfront's VmRSS, VmHWM, open descriptors and threads
#   are sampled every SAMPLE_INTERVAL s into soak-rss.csv. Reported: first / after warm-up /
#   max / last RSS, the least-squares slope after warm-up, "flat" when the last sample is
#   within FLAT_PCT % of the sample taken after WARMUP_SECONDS; ringfront error-log lines
#   (level warn and above) that do not name the failing backend's port (should be 0); wrk's
#   socket errors and non-2xx responses.
#
# Knobs (environment): IDLE_CONNS=10000, IDLE_BATCH=100, SETTLE=3, SOAK_SECONDS=600,
# SAMPLE_INTERVAL=10, WARMUP_SECONDS=60 (capped at SOAK_SECONDS/4), FLAT_PCT=10,
# SOAK_CONNS=50, PARTS="memory soak", PROXIES="ringfront nginx" (part 1), PROXY_CPU=0,
# CLIENT_CPU=1, SKIP_BUILD=1 (use existing target/release binaries), RINGFRONT_BIN,
# DEMO_BACKEND_BIN, BACKEND_PORT=19200 RINGFRONT_PORT=18281 NGINX_PORT=18282
# SOAK_PORT=18283 DEMO_PORTS="19201 19202 19203" (all on 127.0.0.1; the script refuses to
# start when one is taken; the last demo port is the one that fails).
#
# Output: the summary on stdout and in loadtest/out/soak.md; raw numbers in
# loadtest/out/soak/ (memory.csv, soak-rss.csv, wrk.txt, configs and logs). Only loopback
# addresses are used; every step is bounded in time, and every process started here is
# stopped on exit (also on Ctrl-C).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTROOT="$ROOT/loadtest/out"
OUT="$OUTROOT/soak"
IDLE_CONNS=${IDLE_CONNS:-10000}
IDLE_BATCH=${IDLE_BATCH:-100}
SETTLE=${SETTLE:-3}
SOAK_SECONDS=${SOAK_SECONDS:-600}
SAMPLE_INTERVAL=${SAMPLE_INTERVAL:-10}
WARMUP_SECONDS=${WARMUP_SECONDS:-60}
FLAT_PCT=${FLAT_PCT:-10}
SOAK_CONNS=${SOAK_CONNS:-50}
PARTS=${PARTS:-memory soak}
PROXIES=${PROXIES:-ringfront nginx}
PROXY_CPU=${PROXY_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
DEMO_BACKEND_BIN=${DEMO_BACKEND_BIN:-$ROOT/target/release/demo-backend}
NGINX=${NGINX:-/usr/sbin/nginx}
WRK=${WRK:-wrk}

BACKEND_PORT=${BACKEND_PORT:-19200}
SOAK_PORT=${SOAK_PORT:-18283}
read -r -a DEMO_PORTS <<<"${DEMO_PORTS:-19201 19202 19203}"
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18281} [nginx]=${NGINX_PORT:-18282})
FAIL_PORT=${DEMO_PORTS[-1]}

PIDS=() # every long-running process started here

LOG_TAG=soak
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
stop_pid() {
    local p=$1
    kill -TERM "$p" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
cleanup() {
    local p
    for p in "${PIDS[@]}"; do stop_pid "$p"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in taskset "$WRK" curl python3 timeout; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $NGINX ]] || die "nginx not found at $NGINX"
NCPU=$(nproc)
((PROXY_CPU < NCPU && CLIENT_CPU < NCPU)) || die "need cores $PROXY_CPU and $CLIENT_CPU; this machine has $NCPU"
want() { [[ " $PARTS " == *" $1 "* ]]; }

# Descriptors: the client holds IDLE_CONNS sockets, the proxy as many plus upstream ones.
NOFILE_WANT=$((IDLE_CONNS + 1000))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if want memory && (($(ulimit -n) < NOFILE_WANT)); then
    ulimit -n "$NOFILE_WANT" 2>/dev/null || die "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $IDLE_CONNS connections need $NOFILE_WANT"
fi

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }
nfds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# Wait until http://127.0.0.1:PORT/ answers 200 (through the proxy) while PID lives.
wait_http() {
    local port=$1 pid=$2 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/" 2>/dev/null) == 200 ]]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

rm -rf "$OUT"
mkdir -p "$OUT"
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE_START=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')
DIRTY=$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | wc -l)

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    log "building ringfront and demo-backend (release)"
    (cd "$ROOT" && cargo build --release -p ringfront -p ringfront-testkit) >"$OUT/build.log" 2>&1 || {
        tail -20 "$OUT/build.log" >&2
        die "cargo build --release failed (see $OUT/build.log)"
    }
fi
[[ -x $RINGFRONT_BIN ]] || die "no ringfront binary at $RINGFRONT_BIN"
if want soak; then [[ -x $DEMO_BACKEND_BIN ]] || die "no demo-backend binary at $DEMO_BACKEND_BIN"; fi

for port in "$BACKEND_PORT" "${PORT[ringfront]}" "${PORT[nginx]}" "$SOAK_PORT" "${DEMO_PORTS[@]}"; do
    port_free "$port" || die "127.0.0.1:$port is already in use"
done

SUMMARY="$OUTROOT/soak.md"
SECTIONS="$OUT/sections.md"
: >"$SECTIONS"
header() {
    echo "# ringfront soak and memory results"
    echo
    echo "- date: $DATE_START"
    echo "- command: \`IDLE_CONNS=$IDLE_CONNS SOAK_SECONDS=$SOAK_SECONDS PARTS=\"$PARTS\" loadtest/soak.sh\`"
    echo "- ringfront: commit $COMMIT$( ((DIRTY > 0)) && echo " (+$DIRTY modified tracked files)"), $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
    echo "- machine: $NCPU CPUs, $(lscpu | sed -n 's/^Model name: *//p'), kernel $(uname -r)"
    echo "- proxy pinned to core $PROXY_CPU (one worker, one process); backends and clients on core $CLIENT_CPU"
    echo "- load average at start: $LOADAVG_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# ================================================================ part 1: idle connections
start_backend() {
    local d="$OUT/backend"
    mkdir -p "$d/logs"
    cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        location / { return 200 "hello from backend\n"; }
    }
}
EOF
    taskset -c "$CLIENT_CPU" "$NGINX" -p "$d/" -c "$d/nginx.conf" -e "$d/logs/error.log" \
        >"$d/stderr.log" 2>&1 &
    BACKEND_PID=$!
    PIDS+=("$BACKEND_PID")
    wait_http "$BACKEND_PORT" "$BACKEND_PID" || {
        cat "$d/stderr.log" "$d/logs/error.log" >&2 2>/dev/null || true
        die "backend nginx did not start"
    }
    log "backend nginx pid $BACKEND_PID on 127.0.0.1:$BACKEND_PORT (core $CLIENT_CPU)"
}

# Same settings for both proxies: upstream keepalive 64, no access log, client keep-alive
# 300 s and 1,000,000 requests, room for 20,000 connections.
start_ringfront_mem() {
    local d="$OUT/mem-ringfront"
    mkdir -p "$d"
    cat >"$d/ringfront.conf" <<EOF
worker_processes 1;
error_log $d/error.log warn;
events { worker_connections 20000; }
http {
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[ringfront]};
        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
EOF
    taskset -c "$PROXY_CPU" "$RINGFRONT_BIN" -c "$d/ringfront.conf" --workers 1 \
        --cpu-affinity "$PROXY_CPU" >"$d/stdout.log" 2>"$d/stderr.log" &
    MEM_PID=$!
}

start_nginx_mem() {
    local d="$OUT/mem-nginx"
    mkdir -p "$d/logs"
    cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location / {
            proxy_pass http://b;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
    taskset -c "$PROXY_CPU" "$NGINX" -p "$d/" -c "$d/nginx.conf" -e "$d/logs/error.log" \
        >"$d/stdout.log" 2>"$d/stderr.log" &
    MEM_PID=$!
}

# The idle-connection client: prints one JSON object. Bounded: every socket operation has
# a timeout, and the whole client is run under `timeout`.
cat >"$OUT/idle_client.py" <<'PY'
import json, os, socket, sys, time

port, pid, n, batch, settle = (int(a) for a in sys.argv[1:6])
REQ = b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: soak-idle\r\n\r\n"

def status(field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise SystemExit(f"no {field} for pid {pid}")

def nfds():
    return len(os.listdir(f"/proc/{pid}/fd"))

def read_response(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("EOF before end of response head")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    code = int(lines[0].split()[1])
    clen, close = None, False
    for h in lines[1:]:
        name, _, value = h.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"content-length":
            clen = int(value)
        elif name == b"connection" and value == b"close":
            close = True
    if clen is None:
        raise ValueError("response without Content-Length")
    while len(body) < clen:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("EOF inside body")
        body += chunk
    return code, close

time.sleep(0.5)
rss_before, fds_before = status("VmRSS"), nfds()
socks, failures, not_200, closing = [], 0, 0, 0
t0 = time.monotonic()
for start in range(0, n, batch):
    group = []
    for _ in range(min(batch, n - start)):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(REQ)
            group.append(s)
        except OSError:
            failures += 1
            s.close()
    for s in group:
        try:
            code, close = read_response(s)
        except (OSError, ValueError, ConnectionError):
            failures += 1
            s.close()
            continue
        not_200 += code != 200
        closing += close
        socks.append(s)
open_secs = time.monotonic() - t0
time.sleep(settle)
rss_after, hwm_after, fds_after = status("VmRSS"), status("VmHWM"), nfds()
# Every connection must still be open and idle: a non-blocking recv sees no data, no EOF.
still_open = 0
for s in socks:
    s.setblocking(False)
    try:
        data = s.recv(1)
        if data:
            pass  # unexpected bytes: not idle
    except BlockingIOError:
        still_open += 1
    except OSError:
        pass
for s in socks:
    s.close()
time.sleep(settle)
rss_closed, fds_closed = status("VmRSS"), nfds()
print(json.dumps(dict(
    conns=n, served=len(socks), failures=failures, not_200=not_200, closing=closing,
    still_open=still_open, open_secs=round(open_secs, 2),
    rss_before_kb=rss_before, rss_after_kb=rss_after, hwm_after_kb=hwm_after,
    rss_closed_kb=rss_closed, fds_before=fds_before, fds_after=fds_after,
    fds_closed=fds_closed,
    bytes_per_conn=round((rss_after - rss_before) * 1024 / n, 1),
)))
PY

if want memory; then
    start_backend
    echo "proxy,conns,served,failures,not_200,closing,still_open,open_secs,rss_before_kb,rss_after_kb,hwm_after_kb,rss_closed_kb,fds_before,fds_after,fds_closed,bytes_per_conn" >"$OUT/memory.csv"
    for p in $PROXIES; do
        case $p in ringfront | nginx) ;; *) die "unknown proxy '$p'" ;; esac
        "start_${p}_mem"
        PIDS+=("$MEM_PID")
        wait_http "${PORT[$p]}" "$MEM_PID" || {
            tail -20 "$OUT/mem-$p/stderr.log" >&2 || true
            die "$p did not answer on 127.0.0.1:${PORT[$p]}"
        }
        log "$p pid $MEM_PID on 127.0.0.1:${PORT[$p]}: opening $IDLE_CONNS idle keep-alive connections"
        timeout $((IDLE_CONNS / 20 + 4 * SETTLE + 120)) taskset -c "$CLIENT_CPU" python3 "$OUT/idle_client.py" \
            "${PORT[$p]}" "$MEM_PID" "$IDLE_CONNS" "$IDLE_BATCH" "$SETTLE" >"$OUT/mem-$p.json" ||
            die "idle client failed against $p"
        kill -0 "$MEM_PID" 2>/dev/null || die "$p died during the idle-connection test"
        python3 - "$p" "$OUT/mem-$p.json" >>"$OUT/memory.csv" <<'PY'
import json, sys
p, path = sys.argv[1:]
r = json.load(open(path))
keys = ["conns", "served", "failures", "not_200", "closing", "still_open", "open_secs",
        "rss_before_kb", "rss_after_kb", "hwm_after_kb", "rss_closed_kb", "fds_before",
        "fds_after", "fds_closed", "bytes_per_conn"]
print(",".join([p] + [str(r[k]) for k in keys]))
PY
        log "$p: $(cat "$OUT/mem-$p.json")"
        stop_pid "$MEM_PID"
    done
    stop_pid "$BACKEND_PID"

    python3 - "$OUT/memory.csv" "$IDLE_CONNS" "$SETTLE" >>"$SECTIONS" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n, settle = sys.argv[2], sys.argv[3]
print(f"\n## Memory per idle keep-alive client connection ({int(n):,} connections)\n")
print("Each connection served one keep-alive `GET /` (200, 19-byte body) and then sat idle;")
print(f"RSS read {settle} s after the last response. bytes/conn = (RSS after − RSS before) / connections.\n")
print("| proxy | RSS before | RSS with idle conns | RSS after close | bytes/conn | vs nginx | served / still open | proxy fds before → with conns |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
base = next((float(r["bytes_per_conn"]) for r in rows if r["proxy"] == "nginx"), None)
kib = lambda v: f"{int(v) / 1024:.1f} MiB"
for r in rows:
    b = float(r["bytes_per_conn"])
    ratio = f"{b / base:.2f}×" if base else "n/a"
    print(f"| {r['proxy']} | {kib(r['rss_before_kb'])} | {kib(r['rss_after_kb'])} | {kib(r['rss_closed_kb'])} "
          f"| {b:,.0f} | {ratio} | {int(r['served']):,} / {int(r['still_open']):,} | {r['fds_before']} → {r['fds_after']} |")
bad = [r["proxy"] for r in rows if int(r["failures"]) or int(r["not_200"]) or int(r["closing"]) or r["served"] != r["still_open"]]
if bad:
    print(f"\n**Warning:** failed, non-200, `Connection: close` or dropped connections with: {', '.join(bad)} (see memory.csv).")
PY
fi

# ================================================================ part 2: soak under load
if want soak; then
    WARM=$WARMUP_SECONDS
    ((WARM > SOAK_SECONDS / 4)) && WARM=$((SOAK_SECONDS / 4))
    KILL_AT=$((SOAK_SECONDS / 2))
    DEMO_PIDS=()
    for port in "${DEMO_PORTS[@]}"; do
        taskset -c "$CLIENT_CPU" "$DEMO_BACKEND_BIN" --port "$port" >"$OUT/demo-$port.log" 2>&1 &
        DEMO_PIDS+=($!)
        PIDS+=($!)
    done
    for i in "${!DEMO_PORTS[@]}"; do
        wait_http "${DEMO_PORTS[$i]}" "${DEMO_PIDS[$i]}" || die "demo backend on ${DEMO_PORTS[$i]} did not start"
    done
    d="$OUT/soak-ringfront"
    mkdir -p "$d"
    {
        echo "worker_processes 1;"
        echo "error_log $d/error.log warn;"
        echo "events { worker_connections 1024; }"
        echo "http {"
        echo "    keepalive_requests 1000000;"
        echo "    upstream demo {"
        for port in "${DEMO_PORTS[@]}"; do echo "        server 127.0.0.1:$port;"; done
        echo "        keepalive 64;"
        echo "    }"
        echo "    server {"
        echo "        listen 127.0.0.1:$SOAK_PORT;"
        echo "        location / { proxy_pass http://demo; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
        echo "    }"
        echo "}"
    } >"$d/ringfront.conf"
    taskset -c "$PROXY_CPU" "$RINGFRONT_BIN" -c "$d/ringfront.conf" --workers 1 \
        --cpu-affinity "$PROXY_CPU" >"$d/stdout.log" 2>"$d/stderr.log" &
    SOAK_PID=$!
    PIDS+=("$SOAK_PID")
    wait_http "$SOAK_PORT" "$SOAK_PID" || {
        tail -20 "$d/stderr.log" >&2 || true
        die "ringfront did not answer on 127.0.0.1:$SOAK_PORT"
    }
    log "soak: ringfront pid $SOAK_PID on 127.0.0.1:$SOAK_PORT, backends ${DEMO_PORTS[*]}; ${SOAK_SECONDS}s of wrk, backend $FAIL_PORT killed at ${KILL_AT}s"

    CSV="$OUT/soak-rss.csv"
    echo "t_s,rss_kb,hwm_kb,fds,threads,failing" >"$CSV"
    timeout $((SOAK_SECONDS + 60)) taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$SOAK_CONNS" -d"${SOAK_SECONDS}s" \
        "http://127.0.0.1:$SOAK_PORT/" >"$OUT/wrk.txt" 2>&1 &
    WRK_PID=$!
    PIDS+=("$WRK_PID")
    T0=$(date +%s)
    failing=0
    next=0
    while :; do
        now=$(($(date +%s) - T0))
        if ((failing == 0 && now >= KILL_AT)); then
            kill -KILL "${DEMO_PIDS[-1]}" 2>/dev/null || true
            wait "${DEMO_PIDS[-1]}" 2>/dev/null || true
            failing=1
            log "t=${now}s: killed the backend on 127.0.0.1:$FAIL_PORT"
        fi
        if ((now >= next)); then
            kill -0 "$SOAK_PID" 2>/dev/null || die "ringfront died during the soak (t=${now}s)"
            echo "$now,$(rss_kb "$SOAK_PID"),$(hwm_kb "$SOAK_PID"),$(nfds "$SOAK_PID"),$(threads "$SOAK_PID"),$failing" >>"$CSV"
            next=$((next + SAMPLE_INTERVAL))
        fi
        kill -0 "$WRK_PID" 2>/dev/null || break
        sleep 0.5
    done
    wait "$WRK_PID" || log "warning: wrk exited with status $?"
    sleep 1
    now=$(($(date +%s) - T0))
    echo "$now,$(rss_kb "$SOAK_PID"),$(hwm_kb "$SOAK_PID"),$(nfds "$SOAK_PID"),$(threads "$SOAK_PID"),$failing" >>"$CSV"
    kill -0 "$SOAK_PID" 2>/dev/null || die "ringfront died at the end of the soak"
    stop_pid "$SOAK_PID"

    python3 - "$CSV" "$OUT/wrk.txt" "$d/error.log" "$FAIL_PORT" "$WARM" "$FLAT_PCT" \
        "$SOAK_SECONDS" "$KILL_AT" "$SOAK_CONNS" "$CLIENT_CPU" "$SAMPLE_INTERVAL" \
        "${DEMO_PORTS[*]}" >>"$SECTIONS" <<'PY'
import csv, re, sys
(csv_path, wrk_path, err_path, fail_port, warm, flat_pct, secs, kill_at, conns, ccpu,
 interval, ports) = sys.argv[1:]
warm, flat_pct, secs, kill_at = int(warm), float(flat_pct), int(secs), int(kill_at)
rows = [{k: int(v) for k, v in r.items()} for r in csv.DictReader(open(csv_path))]
mib = lambda kb: f"{kb / 1024:.1f} MiB"
first, last = rows[0], rows[-1]
warm_row = next((r for r in rows if r["t_s"] >= warm), rows[0])
mx = max(rows, key=lambda r: r["rss_kb"])
after = [r for r in rows if r["t_s"] >= warm_row["t_s"]]
slope = 0.0
if len(after) >= 2:
    xs = [r["t_s"] for r in after]; ys = [r["rss_kb"] for r in after]
    mx_, my_ = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx_) ** 2 for x in xs)
    slope = sum((x - mx_) * (y - my_) for x, y in zip(xs, ys)) / den * 60 if den else 0.0
change = (last["rss_kb"] - warm_row["rss_kb"]) / warm_row["rss_kb"] * 100
flat = abs(change) <= flat_pct
before_kill = [r for r in rows if not r["failing"]]
wrk = open(wrk_path).read()
m = re.search(r"(\d+) requests in ([\d.]+\w+)", wrk)
reqs, dur = (int(m.group(1)), m.group(2)) if m else (0, "?")
rps = re.search(r"Requests/sec:\s+([\d.]+)", wrk)
e = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", wrk)
sock = dict(zip(["connect", "read", "write", "timeout"], map(int, e.groups()))) if e else {}
n = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
non2xx = int(n.group(1)) if n else 0
try:
    lines = [l.rstrip("\n") for l in open(err_path, errors="replace")]
except FileNotFoundError:
    lines = []
explained = [l for l in lines if f":{fail_port}" in l]
unexplained = [l for l in lines if f":{fail_port}" not in l]
print(f"\n## Soak: {secs} s of wrk through ringfront, one of three backends failing from t={kill_at} s\n")
print(f"`taskset -c {ccpu} wrk -t1 -c{conns} -d{secs}s` against ringfront (one worker) in front of demo backends "
      f"{ports.replace(' ', ', ')}; the backend on {fail_port} was killed (SIGKILL) at t={kill_at} s. "
      f"RSS sampled every {interval} s (`soak-rss.csv`, {len(rows)} samples).\n")
print("| | t | RSS | fds |")
print("|---|---:|---:|---:|")
print(f"| first sample | {first['t_s']} s | {mib(first['rss_kb'])} | {first['fds']} |")
print(f"| after warm-up | {warm_row['t_s']} s | {mib(warm_row['rss_kb'])} | {warm_row['fds']} |")
if before_kill:
    bk = before_kill[-1]
    print(f"| last before the kill | {bk['t_s']} s | {mib(bk['rss_kb'])} | {bk['fds']} |")
print(f"| max | {mx['t_s']} s | {mib(mx['rss_kb'])} | {mx['fds']} |")
print(f"| last (after wrk) | {last['t_s']} s | {mib(last['rss_kb'])} | {last['fds']} |")
print(f"\n- RSS last vs after warm-up: {change:+.1f} % → **{'flat' if flat else 'NOT flat'}** (threshold ±{flat_pct:g} %); "
      f"least-squares slope after warm-up {slope:+.1f} KiB/min; peak VmHWM {mib(max(r['hwm_kb'] for r in rows))}")
print(f"- wrk: {reqs:,} requests in {dur} ({float(rps.group(1)) if rps else 0:,.0f} req/s); "
      f"non-2xx: **{non2xx}**; socket errors: **{sum(sock.values())}** "
      f"({', '.join(f'{k} {v}' for k, v in sock.items()) or 'none'})")
print(f"- ringfront error log (warn and above): {len(lines)} lines; {len(explained)} name the failing backend "
      f"(:{fail_port}); **{len(unexplained)} unexplained**")
if unexplained:
    print("\n```")
    for l in unexplained[:20]:
        print(l)
    if len(unexplained) > 20:
        print(f"... {len(unexplained) - 20} more")
    print("```")
if explained:
    kinds = {}
    for l in explained:
        k = re.sub(r"\d+", "N", re.sub(r"^\S+ \S+ ", "", l))[:120]
        kinds[k] = kinds.get(k, 0) + 1
    print("\nLines naming the failing backend, by kind:\n\n```")
    for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:8]:
        print(f"{v:6d}  {k}")
    print("```")
PY
fi

{
    header
    cat "$SECTIONS"
} >"$SUMMARY"
echo
cat "$SUMMARY"

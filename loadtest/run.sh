#!/usr/bin/env bash
# A/B load test: ringfront vs nginx vs haproxy in front of the same nginx backend.
#
# Every proxy runs ONE worker pinned to PROXY_CPU (default core 0); the backend and wrk
# share CLIENT_CPU (default core 1). Rounds are interleaved (r1: ringfront, nginx, haproxy;
# r2: ...) so drift of the machine hits every proxy alike; the table shows medians over
# rounds. CPU per request comes from the proxy's /proc/PID/stat (utime + stime, all
# threads) read before and after each wrk run, divided by the requests wrk completed.
#
# Knobs (environment): DURATION=10 (s per run), ROUNDS=3, CONNS=50, WARMUP=2 (s per proxy
# before round 1, 0 = none), PROXIES="ringfront nginx haproxy", PROXY_CPU=0, CLIENT_CPU=1,
# SKIP_BUILD=1 (use an existing target/release/ringfront), RINGFRONT_BIN=path,
# REQUIRE_RINGFRONT=1 (fail instead of skipping ringfront when it does not build or start),
# BACKEND_PORT=19000 RINGFRONT_PORT=18081 NGINX_PORT=18082 HAPROXY_PORT=18083 (all on
# 127.0.0.1; the script refuses to start when one is taken).
#
# Output: the table on stdout and in loadtest/out/results.md; raw per-run numbers in
# loadtest/out/raw.csv, every wrk report in loadtest/out/wrk-*.txt, logs in loadtest/out/*/.
# Only loopback addresses are used; every run is bounded by DURATION.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/loadtest/out"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
WARMUP=${WARMUP:-2}
PROXIES=${PROXIES:-ringfront nginx haproxy}
PROXY_CPU=${PROXY_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
NGINX=${NGINX:-/usr/sbin/nginx}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
WRK=${WRK:-wrk}

BACKEND_PORT=${BACKEND_PORT:-19000}
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18081} [nginx]=${NGINX_PORT:-18082} [haproxy]=${HAPROXY_PORT:-18083})
declare -A PID=()
BACKEND_PID=

LOG_TAG=loadtest
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"

cleanup() {
    local p
    for p in "${PID[@]}" $BACKEND_PID; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${PID[@]}" $BACKEND_PID; do
        # Give each process a moment to exit, then force it.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in taskset "$WRK" curl python3 getconf; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $NGINX ]] || die "nginx not found at $NGINX (the backend needs it)"
NCPU=$(nproc)
((PROXY_CPU < NCPU && CLIENT_CPU < NCPU)) || die "need cores $PROXY_CPU and $CLIENT_CPU; this machine has $NCPU"
CLK_TCK=$(getconf CLK_TCK)


# Wait until http://127.0.0.1:PORT/ answers with the backend's body (through the proxy).
wait_http() {
    local port=$1 pid=$2 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if [[ $(curl -s --max-time 1 "http://127.0.0.1:$port/" 2>/dev/null) == "hello from backend" ]]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# utime + stime of a process in clock ticks; /proc/PID/stat sums every thread of it.
# Fields counted after the ")" that closes comm (comm may hold spaces).
cpu_ticks() {
    local stat rest
    stat=$(<"/proc/$1/stat")
    rest=${stat##*) }
    # rest starts at field 3 (state); utime and stime are fields 14 and 15.
    awk '{ print $12 + $13 }' <<<"$rest"
}

rm -rf "$OUT"
mkdir -p "$OUT"
# Anything else running on these cores skews the numbers: record the load at the start.
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- ringfront build
want_ringfront=0
[[ " $PROXIES " == *" ringfront "* ]] && want_ringfront=1
skip_ringfront() {
    if [[ ${REQUIRE_RINGFRONT:-0} == 1 ]]; then die "$*"; fi
    log "warning: $*; skipping ringfront"
    PROXIES=$(sed 's/\bringfront\b//' <<<"$PROXIES")
    want_ringfront=0
}
if ((want_ringfront)); then
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "building ringfront (release)"
        if ! (cd "$ROOT" && cargo build --release -p ringfront) >"$OUT/build.log" 2>&1; then
            tail -20 "$OUT/build.log" >&2
            skip_ringfront "cargo build --release -p ringfront failed (see $OUT/build.log)"
        fi
    fi
    if ((want_ringfront)) && [[ ! -x $RINGFRONT_BIN ]]; then
        skip_ringfront "no ringfront binary at $RINGFRONT_BIN"
    fi
fi
for p in $PROXIES; do
    case $p in
    ringfront | nginx) ;;
    haproxy) [[ -x $HAPROXY ]] || die "haproxy not found at $HAPROXY" ;;
    *) die "unknown proxy '$p'" ;;
    esac
done
[[ -n ${PROXIES// /} ]] || die "no proxy left to test"

for port in "$BACKEND_PORT" "${PORT[ringfront]}" "${PORT[nginx]}" "${PORT[haproxy]}"; do
    port_free "$port" || die "127.0.0.1:$port is already in use"
done

# ---------------------------------------------------------------- backend
# One nginx process (master_process off) answering a fixed body from memory.
mkdir -p "$OUT/backend/logs"
cat >"$OUT/backend/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $OUT/backend/nginx.pid;
error_log $OUT/backend/logs/error.log warn;
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
taskset -c "$CLIENT_CPU" "$NGINX" -p "$OUT/backend/" -c "$OUT/backend/nginx.conf" \
    -e "$OUT/backend/logs/error.log" >"$OUT/backend/stderr.log" 2>&1 &
BACKEND_PID=$!
wait_http "$BACKEND_PORT" "$BACKEND_PID" || {
    cat "$OUT/backend/stderr.log" "$OUT/backend/logs/error.log" >&2 2>/dev/null || true
    die "backend did not start"
}
log "backend nginx pid $BACKEND_PID on 127.0.0.1:$BACKEND_PORT (core $CLIENT_CPU)"

# ---------------------------------------------------------------- proxies
# Same settings everywhere: one worker, upstream keepalive (64 idle connections), no access
# log, and keepalive_requests raised so neither side recycles connections mid-run (haproxy
# has no such limit).
start_ringfront() {
    local d="$OUT/ringfront"
    mkdir -p "$d"
    cat >"$d/ringfront.conf" <<EOF
worker_processes 1;
events { worker_connections 1024; }
http {
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[ringfront]};
        location / { proxy_pass http://b; }
    }
}
EOF
    taskset -c "$PROXY_CPU" "$RINGFRONT_BIN" -c "$d/ringfront.conf" --workers 1 \
        --cpu-affinity "$PROXY_CPU" >"$d/stdout.log" 2>"$d/stderr.log" &
    PID[ringfront]=$!
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q ready "$d/stderr.log" 2>/dev/null && break
        kill -0 "${PID[ringfront]}" 2>/dev/null || break
        sleep 0.1
    done
}

start_nginx() {
    local d="$OUT/nginx"
    mkdir -p "$d/logs"
    cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
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
    PID[nginx]=$!
}

start_haproxy() {
    local d="$OUT/haproxy"
    mkdir -p "$d"
    cat >"$d/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend f
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend b
backend b
    server s1 127.0.0.1:$BACKEND_PORT
EOF
    # -db: foreground, one process (no master-worker mode).
    taskset -c "$PROXY_CPU" "$HAPROXY" -db -f "$d/haproxy.cfg" >"$d/stdout.log" 2>"$d/stderr.log" &
    PID[haproxy]=$!
}

started=
for p in $PROXIES; do
    "start_$p"
    if wait_http "${PORT[$p]}" "${PID[$p]}"; then
        log "$p pid ${PID[$p]} on 127.0.0.1:${PORT[$p]} (core $PROXY_CPU)"
        started+=" $p"
    else
        log "$p did not answer on 127.0.0.1:${PORT[$p]}; its stderr:"
        tail -20 "$OUT/$p/stderr.log" >&2 || true
        kill -KILL "${PID[$p]}" 2>/dev/null || true
        wait "${PID[$p]}" 2>/dev/null || true
        unset "PID[$p]"
        if [[ $p == ringfront ]]; then
            skip_ringfront "ringfront did not start or did not proxy"
        else
            die "$p did not start"
        fi
    fi
done
PROXIES=$started
[[ -n ${PROXIES// /} ]] || die "no proxy started"

# ---------------------------------------------------------------- runs
run_wrk() { # proxy seconds report-file
    taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$CONNS" -d"${2}s" --latency \
        "http://127.0.0.1:${PORT[$1]}/" >"$3" 2>&1
}

if ((WARMUP > 0)); then
    for p in $PROXIES; do
        log "warm-up $p (${WARMUP}s)"
        run_wrk "$p" "$WARMUP" "$OUT/wrk-$p-warmup.txt"
    done
fi

echo "round,proxy,requests,seconds,rps,p50_us,p99_us,errors,non2xx,proxy_ticks,backend_ticks,clk_tck" >"$OUT/raw.csv"
for ((r = 1; r <= ROUNDS; r++)); do
    for p in $PROXIES; do
        report="$OUT/wrk-$p-r$r.txt"
        log "round $r/$ROUNDS: $p (${DURATION}s, $CONNS connections)"
        c0=$(cpu_ticks "${PID[$p]}")
        b0=$(cpu_ticks "$BACKEND_PID")
        run_wrk "$p" "$DURATION" "$report"
        c1=$(cpu_ticks "${PID[$p]}")
        b1=$(cpu_ticks "$BACKEND_PID")
        kill -0 "${PID[$p]}" 2>/dev/null || die "$p died during round $r"
        python3 - "$report" "$r" "$p" $((c1 - c0)) $((b1 - b0)) "$CLK_TCK" >>"$OUT/raw.csv" <<'PY'
import re, sys
path, rnd, proxy, ticks, bticks, clk = sys.argv[1:]
text = open(path).read()
def dur_us(v):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", v)
    n, u = float(m.group(1)), m.group(2)
    return n * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}[u]
m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
if not m:
    sys.exit(f"cannot parse wrk report {path}:\n{text}")
reqs = int(m.group(1))
secs = dur_us(m.group(2) + m.group(3)) / 1e6
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
p50 = dur_us(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
p99 = dur_us(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
e = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
errors = sum(int(x) for x in e.groups()) if e else 0
n = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
non2xx = int(n.group(1)) if n else 0
print(f"{rnd},{proxy},{reqs},{secs:.3f},{rps:.2f},{p50:.1f},{p99:.1f},{errors},{non2xx},{ticks},{bticks},{clk}")
PY
    done
done

# ---------------------------------------------------------------- table
{
    echo "# ringfront load test results"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- command: \`DURATION=$DURATION ROUNDS=$ROUNDS CONNS=$CONNS PROXIES=\"${PROXIES# }\" loadtest/run.sh\`"
    echo "- wrk: \`taskset -c $CLIENT_CPU wrk -t1 -c$CONNS -d${DURATION}s --latency http://127.0.0.1:PORT/\`"
    echo "- machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), kernel $(uname -r)"
    echo "- load average at start: $LOADAVG_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- proxies pinned to core $PROXY_CPU (one worker each); backend nginx and wrk on core $CLIENT_CPU"
    echo "- versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), $("$HAPROXY" -v 2>/dev/null | head -1 | awk '{print "haproxy " $3}'), ringfront $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    python3 - "$OUT/raw.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
order = []
for r in rows:
    if r["proxy"] not in order:
        order.append(r["proxy"])
def med(proxy, f):
    return statistics.median(f(r) for r in rows if r["proxy"] == proxy)
cpu = {p: med(p, lambda r: int(r["proxy_ticks"]) / int(r["clk_tck"]) * 1e6 / max(int(r["requests"]), 1)) for p in order}
base = cpu.get("nginx")
n = len({r["round"] for r in rows})
print(f"Medians over {n} round(s).\n")
# Share of one core the proxy used during the run: near 100 % means the proxy was the
# bottleneck; clearly lower means the client core was (or something else ran on core 0).
busy = {p: med(p, lambda r: int(r["proxy_ticks"]) / int(r["clk_tck"]) / float(r["seconds"]) * 100) for p in order}
print("| proxy | requests/s | p50 latency | p99 latency | CPU µs/request | CPU/request vs nginx | proxy CPU % | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
def lat(us):
    return f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"
for p in order:
    rps = med(p, lambda r: float(r["rps"]))
    p50 = med(p, lambda r: float(r["p50_us"]))
    p99 = med(p, lambda r: float(r["p99_us"]))
    err = sum(int(r["errors"]) + int(r["non2xx"]) for r in rows if r["proxy"] == p)
    ratio = f"{cpu[p] / base:.2f}×" if base else "n/a"
    print(f"| {p} | {rps:,.0f} | {lat(p50)} | {lat(p99)} | {cpu[p]:.2f} | {ratio} | {busy[p]:.0f} | {err} |")
PY
} >"$OUT/results.md"

echo
cat "$OUT/results.md"

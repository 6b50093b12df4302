#!/usr/bin/env bash
# Multi-core scaling: ringfront and nginx with 1, 2, 4, 8 workers in front of the same nginx
# backend, keep-alive traffic with small responses.
#
# Worker i of a proxy with N workers is pinned to the i-th core of PROXY_CPUS (ringfront:
# `--cpu-affinity`; nginx: `worker_cpu_affinity auto` under `taskset` of the same N cores,
# `listen ... reuseport` so that each worker has its own accept queue, as ringfront's
# workers always have). The backend (nginx, BACKEND_WORKERS workers, master process on) runs
# on BACKEND_CPUS, wrk (WRK_THREADS threads) on CLIENT_CPUS, so neither shares a core with
# the proxy. wrk opens CONNS_PER_WORKER connections per proxy worker: the load per worker
# is the same at every size. Rounds are interleaved (r1: every size of every proxy, r2:
# ...), every run starts its proxy afresh and warms it for WARMUP seconds; the tables show
# medians over rounds. CPU per request is the proxy's utime + stime (every process of an
# nginx: master and workers; every thread of ringfront) over the run, divided by the
# requests wrk completed; "cores busy" is that CPU over the run's seconds, for the proxy and
# for the backend (a backend near BACKEND_WORKERS cores busy caps the throughput);
# "sleeps/req" is the proxy's voluntary context switches (a thread waiting for events) per
# request: how many requests an event loop serves per wake-up; "io-wq µs/req" the CPU of the
# kernel's io_uring worker threads (operations not completed inline), included in the CPU.
#
# Knobs (environment): WORKERS="1 2 4 8", PROXIES="ringfront nginx", ROUNDS=3, DURATION=5,
# WARMUP=1, CONNS_PER_WORKER=50, PROXY_CPUS=0-7, BACKEND_CPUS=8-11, BACKEND_WORKERS=4,
# CLIENT_CPUS=12-15, WRK_THREADS=4, NGINX_REUSEPORT=1, RINGFRONT_BIN, NGINX, WRK,
# OUTDIR=loadtest/out/scaling, BACKEND_PORT=19100 RINGFRONT_PORT=18181 NGINX_PORT=18182.
# An A/B of two ringfront builds: RINGFRONT_B_BIN=path and `ringfront-b` in PROXIES (port
# RINGFRONT_B_PORT=18183), measured alongside in every round.
# Needs bash, python3, taskset, timeout; no curl (readiness is checked over /dev/tcp), so it
# runs on a bare machine with the binaries carried in. Only 127.0.0.1 is used.
#
# Output: the table on stdout and in OUTDIR/results.md, raw numbers in OUTDIR/raw.csv.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTDIR=${OUTDIR:-$ROOT/loadtest/out/scaling}
WORKERS=${WORKERS:-1 2 4 8}
PROXIES=${PROXIES:-ringfront nginx}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
CONNS_PER_WORKER=${CONNS_PER_WORKER:-50}
PROXY_CPUS=${PROXY_CPUS:-0-7}
BACKEND_CPUS=${BACKEND_CPUS:-8-11}
BACKEND_WORKERS=${BACKEND_WORKERS:-4}
CLIENT_CPUS=${CLIENT_CPUS:-12-15}
WRK_THREADS=${WRK_THREADS:-4}
NGINX_REUSEPORT=${NGINX_REUSEPORT:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
RINGFRONT_B_BIN=${RINGFRONT_B_BIN:-}
NGINX=${NGINX:-/usr/sbin/nginx}
WRK=${WRK:-wrk}
BACKEND_PORT=${BACKEND_PORT:-19100}
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18181} [nginx]=${NGINX_PORT:-18182}
    [ringfront-b]=${RINGFRONT_B_PORT:-18183})
declare -A BIN=([ringfront]=$RINGFRONT_BIN [ringfront-b]=$RINGFRONT_B_BIN)

LOG_TAG=scaling
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"

PIDS=()
cleanup() { stop_all "${PIDS[@]}"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in taskset timeout python3 getconf "$WRK"; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $NGINX ]] || die "nginx not found at $NGINX"
CLK_TCK=$(getconf CLK_TCK)

# "0-3,8" -> "0 1 2 3 8"
expand_cpus() {
    local part out=()
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then
            out+=($(seq "${part%-*}" "${part#*-}"))
        else
            out+=("$part")
        fi
    done
    echo "${out[@]}"
}
read -r -a PCPU <<<"$(expand_cpus "$PROXY_CPUS")"
NCPU=$(nproc)
for n in $WORKERS; do
    ((n <= ${#PCPU[@]})) || die "$n workers need $n cores in PROXY_CPUS=$PROXY_CPUS"
done
for c in "${PCPU[@]}" $(expand_cpus "$BACKEND_CPUS") $(expand_cpus "$CLIENT_CPUS"); do
    ((c < NCPU)) || die "core $c: this machine has $NCPU"
done
for p in $PROXIES; do
    case $p in
    ringfront | ringfront-b) [[ -x ${BIN[$p]} ]] || die "no binary for $p at '${BIN[$p]}'" ;;
    nginx) ;;
    *) die "unknown proxy '$p'" ;;
    esac
done
for port in "$BACKEND_PORT" "${PORT[ringfront]}" "${PORT[nginx]}" "${PORT[ringfront-b]}"; do
    port_free "$port" || die "127.0.0.1:$port is already in use"
done
ulimit -n 65536 2>/dev/null || true

rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

# The first N cores of PROXY_CPUS, comma-separated.
cores_of() { local IFS=,; echo "${PCPU[*]:0:$1}"; }

# A GET over /dev/tcp; true when the answer carries the backend's body.
http_ok() {
    local reply
    reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET / HTTP/1.0\r\nHost: scaling\r\n\r\n" >&3; cat <&3' _ "$1" 2>/dev/null) || true
    [[ $reply == *"hello from backend"* ]]
}
wait_http() { # port pid
    local i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$2" 2>/dev/null || return 1
        http_ok "$1" && return 0
        sleep 0.1
    done
    return 1
}

# "utime stime" in clock ticks of process PID and its children (nginx's master and
# workers; ringfront's threads are summed in its own stat).
tree_ticks() {
    local root=$1 f stat rest pid u=0 s=0
    local -a a
    for f in /proc/[0-9]*/stat; do
        stat=$(<"$f") 2>/dev/null || continue
        pid=${f#/proc/}
        pid=${pid%/stat}
        rest=${stat##*) }
        read -r -a a <<<"$rest"
        # a[1] is the parent (field 4), a[11] utime (14), a[12] stime (15).
        if [[ $pid == "$root" || ${a[1]} == "$root" ]]; then
            u=$((u + a[11]))
            s=$((s + a[12]))
        fi
    done
    echo "$u $s"
}

# "voluntary involuntary" context switches of process PID and its children, every thread: a
# voluntary one is a thread going to sleep for want of work (an event loop's wait).
tree_switches() {
    local root=$1 f stat rest pid v=0 n=0 t
    for f in /proc/[0-9]*/stat; do
        stat=$(<"$f") 2>/dev/null || continue
        pid=${f#/proc/}
        pid=${pid%/stat}
        rest=${stat##*) }
        read -r _ ppid _ <<<"$rest"
        [[ $pid == "$root" || $ppid == "$root" ]] || continue
        for t in /proc/"$pid"/task/*/status; do
            while read -r key val; do
                case $key in
                voluntary_ctxt_switches:) v=$((v + val)) ;;
                nonvoluntary_ctxt_switches:) n=$((n + val)) ;;
                esac
            done <"$t" 2>/dev/null || true
        done
    done
    echo "$v $n"
}

# utime + stime ticks of PID's io_uring worker threads (`iou-wrk-*`: operations the kernel
# could not complete inline and handed to a worker pool). They are part of PID's CPU.
iou_ticks() {
    local t stat rest sum=0
    local -a a
    for t in /proc/"$1"/task/*/stat; do
        stat=$(<"$t") 2>/dev/null || continue
        [[ $stat == *"(iou-"* ]] || continue
        rest=${stat##*) }
        read -r -a a <<<"$rest"
        sum=$((sum + a[11] + a[12]))
    done
    echo "$sum"
}

nginx_user() { [[ $(id -u) == 0 ]] && echo "user root;" || true; }

# ---------------------------------------------------------------- backend
mkdir -p "$OUTDIR/backend/logs"
cat >"$OUTDIR/backend/nginx.conf" <<EOF
daemon off;
$(nginx_user)
worker_processes $BACKEND_WORKERS;
worker_cpu_affinity auto;
worker_rlimit_nofile 65536;
pid $OUTDIR/backend/nginx.pid;
error_log $OUTDIR/backend/logs/error.log warn;
events { worker_connections 30000; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    server {
        listen 127.0.0.1:$BACKEND_PORT backlog=16384 reuseport;
        location / { return 200 "hello from backend\n"; }
    }
}
EOF
taskset -c "$BACKEND_CPUS" "$NGINX" -p "$OUTDIR/backend/" -c "$OUTDIR/backend/nginx.conf" \
    -e "$OUTDIR/backend/logs/error.log" >"$OUTDIR/backend/stderr.log" 2>&1 &
BACKEND_PID=$!
PIDS+=("$BACKEND_PID")
wait_http "$BACKEND_PORT" "$BACKEND_PID" || {
    cat "$OUTDIR/backend/stderr.log" "$OUTDIR/backend/logs/error.log" >&2 2>/dev/null || true
    die "backend did not start"
}
log "backend nginx pid $BACKEND_PID, $BACKEND_WORKERS workers on cores $BACKEND_CPUS"

# ---------------------------------------------------------------- proxies
# The same configuration for both: upstream keepalive with nginx's recipe, no access log,
# keepalive_requests raised so no connection is recycled mid-run.
start_ringfront() { # workers [name]
    local name=${2:-ringfront}
    local d="$OUTDIR/$name-$1"
    mkdir -p "$d"
    cat >"$d/ringfront.conf" <<EOF
worker_processes $1;
worker_rlimit_nofile 65536;
events { worker_connections 30000; }
http {
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[$name]} backlog=16384;
        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
EOF
    taskset -c "$(cores_of "$1")" "${BIN[$name]}" -c "$d/ringfront.conf" --workers "$1" \
        --cpu-affinity "$(cores_of "$1")" >"$d/stdout.log" 2>"$d/stderr.log" &
    PROXY_PID=$!
}
start_ringfront-b() { start_ringfront "$1" ringfront-b; }

start_nginx() { # workers
    local d="$OUTDIR/nginx-$1" rp=
    mkdir -p "$d/logs"
    [[ $NGINX_REUSEPORT == 1 ]] && rp=" reuseport"
    cat >"$d/nginx.conf" <<EOF
daemon off;
$(nginx_user)
worker_processes $1;
worker_cpu_affinity auto;
worker_rlimit_nofile 65536;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 30000; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[nginx]} backlog=16384$rp;
        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
EOF
    taskset -c "$(cores_of "$1")" "$NGINX" -p "$d/" -c "$d/nginx.conf" -e "$d/logs/error.log" \
        >"$d/stdout.log" 2>"$d/stderr.log" &
    PROXY_PID=$!
}

run_wrk() { # port conns seconds report
    taskset -c "$CLIENT_CPUS" "$WRK" -t"$WRK_THREADS" -c"$2" -d"${3}s" --latency \
        "http://127.0.0.1:$1/" >"$4" 2>&1
}

echo "workers,round,proxy,requests,seconds,rps,p50_us,p99_us,errors,non2xx,utime,stime,backend_ticks,clk_tck,vcsw,ivcsw,iou_ticks" >"$OUTDIR/raw.csv"
for ((r = 1; r <= ROUNDS; r++)); do
    for n in $WORKERS; do
        conns=$((CONNS_PER_WORKER * n))
        ((conns >= WRK_THREADS)) || conns=$WRK_THREADS
        for p in $PROXIES; do
            "start_$p" "$n"
            PIDS+=("$PROXY_PID")
            wait_http "${PORT[$p]}" "$PROXY_PID" || {
                tail -20 "$OUTDIR/$p-$n/stderr.log" >&2 || true
                die "$p with $n workers did not answer"
            }
            if ((WARMUP > 0)); then
                run_wrk "${PORT[$p]}" "$conns" "$WARMUP" "$OUTDIR/wrk-$p-$n-warmup.txt"
            fi
            report="$OUTDIR/wrk-$p-$n-r$r.txt"
            log "round $r/$ROUNDS: $p, $n workers, $conns connections, ${DURATION}s"
            read -r u0 s0 <<<"$(tree_ticks "$PROXY_PID")"
            read -r bu0 bs0 <<<"$(tree_ticks "$BACKEND_PID")"
            read -r v0 n0 <<<"$(tree_switches "$PROXY_PID")"
            i0=$(iou_ticks "$PROXY_PID")
            run_wrk "${PORT[$p]}" "$conns" "$DURATION" "$report"
            read -r u1 s1 <<<"$(tree_ticks "$PROXY_PID")"
            read -r bu1 bs1 <<<"$(tree_ticks "$BACKEND_PID")"
            read -r v1 n1 <<<"$(tree_switches "$PROXY_PID")"
            i1=$(iou_ticks "$PROXY_PID")
            kill -0 "$PROXY_PID" 2>/dev/null || die "$p died with $n workers in round $r"
            wrk=$(wrk_fields "$report" requests seconds rps p50_us p99_us errors non2xx)
            echo "$n,$r,$p,$wrk,$((u1 - u0)),$((s1 - s0)),$((bu1 + bs1 - bu0 - bs0)),$CLK_TCK,$((v1 - v0)),$((n1 - n0)),$((i1 - i0))" >>"$OUTDIR/raw.csv"
            kill -TERM "$PROXY_PID" 2>/dev/null || true
            wait "$PROXY_PID" 2>/dev/null || true
        done
    done
done

# ---------------------------------------------------------------- table
{
    echo "# ringfront multi-core scaling"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- command: \`WORKERS=\"$WORKERS\" PROXIES=\"$PROXIES\" ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP CONNS_PER_WORKER=$CONNS_PER_WORKER PROXY_CPUS=$PROXY_CPUS BACKEND_CPUS=$BACKEND_CPUS BACKEND_WORKERS=$BACKEND_WORKERS CLIENT_CPUS=$CLIENT_CPUS WRK_THREADS=$WRK_THREADS NGINX_REUSEPORT=$NGINX_REUSEPORT bash loadtest/scaling.sh\`"
    echo "- wrk: \`taskset -c $CLIENT_CPUS wrk -t$WRK_THREADS -c<$CONNS_PER_WORKER × workers> -d${DURATION}s --latency http://127.0.0.1:PORT/\`"
    echo "- machine: $NCPU CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), kernel $(uname -r)"
    echo "- load average at start: $LOADAVG_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), $("$RINGFRONT_BIN" -v 2>&1 | sed 's/^nginx version: //') $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || true)${RINGFRONT_B_BIN:+; ringfront-b: $RINGFRONT_B_BIN}"
    echo
    python3 - "$OUTDIR/raw.csv" "$BACKEND_WORKERS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bw = int(sys.argv[2])
proxies = list(dict.fromkeys(r["proxy"] for r in rows))
sizes = sorted({int(r["workers"]) for r in rows})
def med(p, n, f):
    return statistics.median(f(r) for r in rows if r["proxy"] == p and int(r["workers"]) == n)
def per_req(r, t):
    return t / int(r["clk_tck"]) * 1e6 / max(int(r["requests"]), 1)
def busy(r, t):
    return t / int(r["clk_tck"]) / float(r["seconds"])
def lat(us):
    return f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"
n_rounds = len({r["round"] for r in rows})
print(f"Medians over {n_rounds} round(s). Speed-up: requests/s over the same proxy's with "
      f"{sizes[0]} worker(s); efficiency: speed-up over the worker ratio.\n")
print("| proxy | workers | requests/s | speed-up | efficiency | CPU µs/req | user µs/req | proxy cores busy | backend cores busy (of %d) | sleeps/req | io-wq µs/req | p50 | p99 | errors |" % bw)
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
cpu = {}
for p in proxies:
    base = med(p, sizes[0], lambda r: float(r["rps"]))
    for n in sizes:
        rps = med(p, n, lambda r: float(r["rps"]))
        c = med(p, n, lambda r: per_req(r, int(r["utime"]) + int(r["stime"])))
        cpu[(p, n)] = (c, rps)
        u = med(p, n, lambda r: per_req(r, int(r["utime"])))
        pb = med(p, n, lambda r: busy(r, int(r["utime"]) + int(r["stime"])))
        bb = med(p, n, lambda r: busy(r, int(r["backend_ticks"])))
        p50 = med(p, n, lambda r: float(r["p50_us"]))
        p99 = med(p, n, lambda r: float(r["p99_us"]))
        sleeps = med(p, n, lambda r: int(r["vcsw"]) / max(int(r["requests"]), 1))
        iou = med(p, n, lambda r: per_req(r, int(r["iou_ticks"])))
        err = sum(int(r["errors"]) + int(r["non2xx"]) for r in rows
                  if r["proxy"] == p and int(r["workers"]) == n)
        sp = rps / base
        print(f"| {p} | {n} | {rps:,.0f} | {sp:.2f}× | {sp / (n / sizes[0]):.0%} | {c:.2f} | {u:.2f} | {pb:.2f} | {bb:.2f} | {sleeps:.3f} | {iou:.2f} | {lat(p50)} | {lat(p99)} | {err} |")
for a, b in [("ringfront", "nginx"), ("ringfront-b", "nginx"), ("ringfront", "ringfront-b")]:
    if a in proxies and b in proxies:
        print(f"\n| workers | {a} / {b} CPU per request | {a} / {b} requests/s |")
        print("|---:|---:|---:|")
        for n in sizes:
            (cr, rr), (cn, rn) = cpu[(a, n)], cpu[(b, n)]
            print(f"| {n} | {cr / cn:.2f}× | {rr / rn:.2f}× |")
PY
} >"$OUTDIR/results.md"

echo
cat "$OUTDIR/results.md"

#!/usr/bin/env bash
# A/B load test: ringfront vs nginx vs haproxy in front of the same nginx backend.
#
# Every proxy runs ONE worker pinned to PROXY_CPU (default core 0); the backend and wrk
# share CLIENT_CPU (default core 1). Rounds are interleaved (r1: ringfront, nginx, haproxy;
# r2: ...) so drift of the machine hits every proxy alike; the table shows medians over
# rounds. CPU per request comes from the proxy's /proc/PID/stat (utime + stime, all
# threads) read before and after each wrk run, divided by the requests wrk completed.
#
# Traffic shapes (SHAPES=, all by default, in this order): keepalive (CONNS keep-alive
# connections, small responses), close (a new connection per request: `Connection: close`,
# 16 connections), body64k and body1m (64 KiB / 1 MiB responses the backend serves from
# tmpfs, 16 connections), idle10k (IDLE=9900 open keep-alive client connections that made one
# request each, plus 100 active; the proxy's RSS is read while they are open), logged (the
# keepalive shape on a location that writes nginx's default access log, `combined`, to a
# file: what an edge tier runs; haproxy logs `option httplog` lines to its stdout file),
# post4k (CONNS keep-alive connections, each request a POST with a 4 KiB body) and upload1m
# (16 connections, each request a POST with a 1 MiB body; the default client_max_body_size
# of 1m admits it), small responses: the request bodies an API edge carries. busy1k (1,000
# keep-alive connections, small responses) is the keepalive shape at an edge's connection
# count: past what a cache holds per connection.
# Two floor lines run with the proxies in every shape: `backend` (wrk straight at the backend;
# its CPU is the backend's) and `relay` (loadtest/relay: a minimal monoio relay with
# ringfront's ring flags, pooled upstream connections taken per request as a proxy's
# `keepalive` does, no parsing beyond framing and `Connection: close`), so each proxy's cost
# can be read against the least this topology can cost. A third floor, `relay-http` (the same
# relay with `--http`: both heads parsed with httparse and written anew without hop-by-hop
# headers), is the least an HTTP proxy can cost; it runs when FLOORS names it. So does
# `relay-splice` (the relay with `--splice`: a body beyond the head's 4 KiB read moves
# through a pipe with splice(2), as ringfront moves a large body; the floor of the large-body
# shapes).
#
# Knobs (environment): SHAPES="keepalive logged close body64k body1m idle10k post4k upload1m busy1k", DURATION=10 (s per
# run), ROUNDS=3, CONNS=50, WARMUP=2 (s per proxy before each round, 0 = none),
# PROXIES="ringfront nginx haproxy", FLOORS="relay backend" (empty: none; also relay-http, relay-splice), PROXY_CPU=0, CLIENT_CPU=1,
# HAPROXY_SPLICE=1 (HAProxy with `option splice-response`, as ringfront moves large bodies), KEEPALIVE=64
# (the `keepalive` of ringfront's and nginx's upstream),
# SKIP_BUILD=1 (use an existing target/release/ringfront), RINGFRONT_BIN=path,
# REQUIRE_RINGFRONT=1 (fail instead of skipping ringfront when it does not build or start),
# BACKEND_PORT=19000 RINGFRONT_PORT=18081 NGINX_PORT=18082 HAPROXY_PORT=18083 RELAY_PORT=18084 RELAY_HTTP_PORT=18085 RELAY_SPLICE_PORT=18086 (all on
# 127.0.0.1; the script refuses to start when one is taken).
#
# Output: the table on stdout and in loadtest/out/results.md; raw per-run numbers in
# loadtest/out/raw.csv, every wrk report in loadtest/out/wrk-*.txt, logs in loadtest/out/*/.
# The last column counts the connections listeners dropped during a proxy's runs (a full
# accept queue, the backend's or the proxy's): each is a request at ~1 s; read the tail with it.
# Only loopback addresses are used; every run is bounded by DURATION.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/loadtest/out"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
SHAPES=${SHAPES:-keepalive logged close body64k body1m idle10k post4k upload1m busy1k}
# The proxies' `keepalive` (idle upstream connections kept per worker); busy1k churns with 64.
KEEPALIVE=${KEEPALIVE:-64}
FLOORS=${FLOORS-relay backend}
IDLE=${IDLE:-9900}
WARMUP=${WARMUP:-2}
PROXIES=${PROXIES:-ringfront nginx haproxy}
PROXY_CPU=${PROXY_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
NGINX=${NGINX:-/usr/sbin/nginx}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
WRK=${WRK:-wrk}

BACKEND_PORT=${BACKEND_PORT:-19000}
RELAY_BIN=${RELAY_BIN:-$ROOT/target/release/ringfront-floor-relay}
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18081} [nginx]=${NGINX_PORT:-18082} [haproxy]=${HAPROXY_PORT:-18083}
    [relay]=${RELAY_PORT:-18084} [relay-http]=${RELAY_HTTP_PORT:-18085}
    [relay-splice]=${RELAY_SPLICE_PORT:-18086} [backend]=$BACKEND_PORT)
declare -A PID=()
BACKEND_PID=

LOG_TAG=loadtest
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"

BODIES=
cleanup() {
    [[ -n $BODIES ]] && rm -rf "$BODIES"
    stop_all "${PID[@]}" $BACKEND_PID
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
# utime alone (user space).
user_ticks() {
    local stat rest
    stat=$(<"/proc/$1/stat")
    rest=${stat##*) }
    awk '{ print $12 }' <<<"$rest"
}

rm -rf "$OUT"
mkdir -p "$OUT"
# Anything else running on these cores skews the numbers: record the load at the start.
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- builds
want_ringfront=0
[[ " $PROXIES " == *" ringfront "* ]] && want_ringfront=1
skip_ringfront() {
    if [[ ${REQUIRE_RINGFRONT:-0} == 1 ]]; then die "$*"; fi
    log "warning: $*; skipping ringfront"
    PROXIES=$(sed 's/\bringfront\b//' <<<"$PROXIES")
    want_ringfront=0
}
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    if ((want_ringfront)); then
        log "building ringfront (release)"
        if ! (cd "$ROOT" && cargo build --release -p ringfront) >"$OUT/build.log" 2>&1; then
            tail -20 "$OUT/build.log" >&2
            skip_ringfront "cargo build --release -p ringfront failed (see $OUT/build.log)"
        fi
    fi
    if [[ " $FLOORS " == *" relay"* ]]; then
        log "building the floor relay (release)"
        (cd "$ROOT" && cargo build --release -p ringfront-floor-relay) >>"$OUT/build.log" 2>&1 ||
            die "cargo build --release -p ringfront-floor-relay failed (see $OUT/build.log)"
    fi
fi
if ((want_ringfront)) && [[ ! -x $RINGFRONT_BIN ]]; then
    skip_ringfront "no ringfront binary at $RINGFRONT_BIN"
fi
if [[ " $FLOORS " == *" relay"* && ! -x $RELAY_BIN ]]; then
    die "no floor relay at $RELAY_BIN (cargo build --release -p ringfront-floor-relay)"
fi
for p in $PROXIES; do
    case $p in
    ringfront | nginx) ;;
    haproxy) [[ -x $HAPROXY ]] || die "haproxy not found at $HAPROXY" ;;
    *) die "unknown proxy '$p'" ;;
    esac
done
for f in $FLOORS; do
    case $f in relay | relay-http | relay-splice | backend) ;; *) die "unknown floor '$f'" ;; esac
done
for s in $SHAPES; do
    case $s in keepalive | logged | close | body64k | body1m | idle10k | post4k | upload1m | busy1k) ;; *) die "unknown shape '$s'" ;; esac
done
[[ -n ${PROXIES// /} ]] || die "no proxy left to test"

for port in "$BACKEND_PORT" "${PORT[ringfront]}" "${PORT[nginx]}" "${PORT[haproxy]}" "${PORT[relay]}" "${PORT[relay-http]}" "${PORT[relay-splice]}"; do
    port_free "$port" || die "127.0.0.1:$port is already in use"
done
# idle10k holds IDLE client connections.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
# haproxy asks for two descriptors per maxconn.
HAPROXY_MAXCONN=$((NOFILE / 2 - 100 < 30000 ? NOFILE / 2 - 100 : 30000))
if ((IDLE + 100 > HAPROXY_MAXCONN - 100)); then
    log "warning: open-file limit $NOFILE: idle10k holds $((HAPROXY_MAXCONN - 200)) idle connections, not $IDLE"
    IDLE=$((HAPROXY_MAXCONN - 200))
fi

# ---------------------------------------------------------------- backend
# One nginx process (master_process off): a fixed body from memory for `/`, and the large
# bodies from files on tmpfs (page cache, never the disk) through sendfile.
mkdir -p "$OUT/backend/logs"
BODIES=$(mktemp -d /dev/shm/ringfront-loadtest.XXXXXX)
head -c 65536 /dev/zero | tr '\0' 'a' >"$BODIES/64k"
head -c 1048576 /dev/zero | tr '\0' 'b' >"$BODIES/1m"
cat >"$OUT/backend/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 65536;
pid $OUT/backend/nginx.pid;
error_log $OUT/backend/logs/error.log warn;
events { worker_connections 30000; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    sendfile on;
    open_file_cache max=16;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$BACKEND_PORT backlog=16384;
        location / { return 200 "hello from backend\n"; }
        location /64k { root $BODIES; rewrite ^ /64k break; }
        location /1m { root $BODIES; rewrite ^ /1m break; }
    }
}
EOF
taskset -c "$CLIENT_CPU" "$NGINX" -p "$OUT/backend/" -c "$OUT/backend/nginx.conf" \
    -e "$OUT/backend/logs/error.log" >"$OUT/backend/stderr.log" 2>&1 &
BACKEND_PID=$!
PID[backend]=$BACKEND_PID
wait_http "$BACKEND_PORT" "$BACKEND_PID" || {
    cat "$OUT/backend/stderr.log" "$OUT/backend/logs/error.log" >&2 2>/dev/null || true
    die "backend did not start"
}
log "backend nginx pid $BACKEND_PID on 127.0.0.1:$BACKEND_PORT (core $CLIENT_CPU)"

# ---------------------------------------------------------------- proxies
# Same settings everywhere: one worker, upstream keepalive (64 idle connections), no access
# log, keepalive_requests raised so neither side recycles connections mid-run (haproxy has
# no such limit), and client keep-alive long enough that idle10k's connections outlast its
# run.
start_ringfront() {
    local d="$OUT/ringfront"
    mkdir -p "$d"
    cat >"$d/ringfront.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 65536;
events { worker_connections 30000; }
http {
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive $KEEPALIVE; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[ringfront]} backlog=16384;
        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; }
        location /logged { access_log $d/logs/access.log; proxy_pass http://b;
            proxy_http_version 1.1; proxy_set_header Connection ""; }
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
worker_rlimit_nofile 65536;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections 30000; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive $KEEPALIVE; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[nginx]} backlog=16384;
        location / {
            proxy_pass http://b;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /logged {
            access_log $d/logs/access.log;
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
    maxconn $HAPROXY_MAXCONN
$( ((${HAPROXY_SPLICE:-0})) && echo "    maxpipes 32")
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 600s
    timeout server 30s
    timeout http-keep-alive 600s
$( ((${HAPROXY_SPLICE:-0})) && echo "    option splice-response")
frontend f
    bind 127.0.0.1:${PORT[haproxy]}
    backlog 16384
    log stdout format raw local0
    option httplog
    http-request set-log-level silent unless { path_beg /logged }
    default_backend b
backend b
    server s1 127.0.0.1:$BACKEND_PORT
EOF
    # -db: foreground, one process (no master-worker mode).
    # Appending, so that the log lines (stdout) can be truncated between runs.
    rm -f "$d/stdout.log"
    taskset -c "$PROXY_CPU" "$HAPROXY" -db -f "$d/haproxy.cfg" >>"$d/stdout.log" 2>"$d/stderr.log" &
    PID[haproxy]=$!
}

start_relay() {
    mkdir -p "$OUT/relay"
    taskset -c "$PROXY_CPU" "$RELAY_BIN" "127.0.0.1:${PORT[relay]}" "127.0.0.1:$BACKEND_PORT" \
        >"$OUT/relay/stdout.log" 2>"$OUT/relay/stderr.log" &
    PID[relay]=$!
}

start_relay-splice() {
    mkdir -p "$OUT/relay-splice"
    taskset -c "$PROXY_CPU" "$RELAY_BIN" --splice "127.0.0.1:${PORT[relay-splice]}" "127.0.0.1:$BACKEND_PORT" \
        >"$OUT/relay-splice/stdout.log" 2>"$OUT/relay-splice/stderr.log" &
    PID[relay-splice]=$!
}

start_relay-http() {
    mkdir -p "$OUT/relay-http"
    taskset -c "$PROXY_CPU" "$RELAY_BIN" --http "127.0.0.1:${PORT[relay-http]}" "127.0.0.1:$BACKEND_PORT" \
        >"$OUT/relay-http/stdout.log" 2>"$OUT/relay-http/stderr.log" &
    PID[relay-http]=$!
}

# Every round starts each proxy afresh: a process keeps a cost level of its own for its life
# (two processes of one ringfront binary started once measured 0.93-1.07 of each other in
# loadtest/ab.sh, 2026-12-03), so proxies started once would carry that offset into every
# round's figure, and no median removes it.
start_one() { # proxy; 0 when it answers
    local p=$1
    "start_$p"
    if wait_http "${PORT[$p]}" "${PID[$p]}"; then
        log "$p pid ${PID[$p]} on 127.0.0.1:${PORT[$p]} (core $PROXY_CPU)"
        return 0
    fi
    log "$p did not answer on 127.0.0.1:${PORT[$p]}; its stderr:"
    tail -20 "$OUT/$p/stderr.log" >&2 || true
    kill -KILL "${PID[$p]}" 2>/dev/null || true
    wait "${PID[$p]}" 2>/dev/null || true
    unset "PID[$p]"
    return 1
}
stop_one() {
    kill -TERM "${PID[$1]}" 2>/dev/null || true
    wait "${PID[$1]}" 2>/dev/null || true
    unset "PID[$1]"
}
started=
for p in $PROXIES $(sed 's/\bbackend\b//' <<<"$FLOORS"); do
    if start_one "$p"; then
        started+=" $p"
    elif [[ $p == ringfront ]]; then
        skip_ringfront "ringfront did not start or did not proxy"
    else
        die "$p did not start"
    fi
done
[[ " $FLOORS " == *" backend "* ]] && started+=" backend"
RUNNERS=$started
[[ -n ${RUNNERS// /} ]] || die "no proxy started"
PROCS=$(sed 's/\bbackend\b//' <<<"$RUNNERS")

# ---------------------------------------------------------------- runs
# shape -> wrk connections, extra wrk arguments, path
declare -A SHAPE_CONNS=([keepalive]=$CONNS [logged]=$CONNS [close]=16 [body64k]=16 [body1m]=16
    [idle10k]=100 [post4k]=$CONNS [upload1m]=16 [busy1k]=1000)
declare -A SHAPE_PATH=([keepalive]=/ [logged]=/logged [close]=/ [body64k]=/64k [body1m]=/1m
    [idle10k]=/ [post4k]=/ [upload1m]=/ [busy1k]=/)
# Request bodies (loadtest/tail.lua sends a POST of this many bytes when it is set).
declare -A SHAPE_POST=([post4k]=4096 [upload1m]=1048576)
run_wrk() { # runner shape seconds report-file
    local hdr=()
    [[ $2 == close ]] && hdr=(-H "Connection: close")
    WRK_POST_BYTES=${SHAPE_POST[$2]:-0} taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"${SHAPE_CONNS[$2]}" -d"${3}s" --latency \
        -s "$ROOT/loadtest/tail.lua" "${hdr[@]}" \
        "http://127.0.0.1:${PORT[$1]}${SHAPE_PATH[$2]}" >"$4" 2>&1
}

# idle10k: IDLE keep-alive connections to PORT that made one request each, held open
# until stdin closes. Prints "open N" once they are all up.
IDLE_HOLDER='
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = []
req = b"GET / HTTP/1.1\r\nHost: idle\r\n\r\n"
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    conns.append(s)
for s in conns:
    got = b""
    while b"hello from backend" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("an idle connection was closed")
        got += chunk
print("open", len(conns), flush=True)
sys.stdin.read()
'
IDLE_PID=
open_idle() { # runner
    coproc HOLDER { taskset -c "$CLIENT_CPU" python3 -c "$IDLE_HOLDER" "${PORT[$1]}" "$IDLE"; }
    local line
    read -r line <&"${HOLDER[0]}" || die "could not open $IDLE idle connections to $1"
    [[ $line == "open $IDLE" ]] || die "idle holder: $line"
}
close_idle() {
    local fd=${HOLDER[1]}
    exec {fd}>&-
    wait "$HOLDER_PID" 2>/dev/null || true
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# Connections any listener on this machine dropped so far because its accept queue was full
# (TcpExt ListenDrops; each queue here is min(backlog, net.core.somaxconn) long): a SYN dropped
# is sent again a second later, so each drop puts a request at about 1 s (wrk's timeout is
# 2 s), and the p99.9 column is then a queue's, not the proxy's work.
listen_drops() { net_counter /proc/net/netstat TcpExt ListenDrops; }

echo "shape,round,proxy,requests,seconds,rps,p50_us,p99_us,transfer_bps,errors,non2xx,proxy_ticks,proxy_uticks,backend_ticks,rss_kb,clk_tck,p98_us,p999_us,listen_drops" >"$OUT/raw.csv"
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r > 1)); then
        for p in $PROCS; do start_one "$p" || die "$p did not start for round $r"; done
    fi
    if ((WARMUP > 0)); then
        for p in $RUNNERS; do
            log "warm-up $p (${WARMUP}s)"
            run_wrk "$p" keepalive "$WARMUP" "$OUT/wrk-$p-warmup.txt"
        done
    fi
    for shape in $SHAPES; do
        for p in $RUNNERS; do
            report="$OUT/wrk-$shape-$p-r$r.txt"
            [[ $shape == idle10k ]] && open_idle "$p"
            log "$shape round $r/$ROUNDS: $p (${DURATION}s, ${SHAPE_CONNS[$shape]} connections)"
            c0=$(cpu_ticks "${PID[$p]}")
            u0=$(user_ticks "${PID[$p]}")
            b0=$(cpu_ticks "$BACKEND_PID")
            d0=$(listen_drops)
            run_wrk "$p" "$shape" "$DURATION" "$report"
            c1=$(cpu_ticks "${PID[$p]}")
            u1=$(user_ticks "${PID[$p]}")
            b1=$(cpu_ticks "$BACKEND_PID")
            d1=$(listen_drops)
            rss=$(rss_kb "${PID[$p]}")
            # The access logs (appended to) would fill the disk over many rounds.
            if [[ $shape == logged ]]; then
                truncate -s 0 "$OUT"/*/logs/access.log "$OUT/haproxy/stdout.log" 2>/dev/null || true
            fi
            [[ $shape == idle10k ]] && close_idle
            kill -0 "${PID[$p]}" 2>/dev/null || die "$p died during $shape round $r"
            wrk=$(wrk_fields "$report" requests seconds rps p50_us p99_us transfer_bps errors non2xx)
            tail=$(wrk_fields "$report" p98_us p999_us)
            echo "$shape,$r,$p,$wrk,$((c1 - c0)),$((u1 - u0)),$((b1 - b0)),$rss,$CLK_TCK,$tail,$((d1 - d0))" >>"$OUT/raw.csv"
        done
    done
    for p in $PROCS; do stop_one "$p"; done
done

# ---------------------------------------------------------------- table
{
    echo "# ringfront load test results"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- command: \`SHAPES=\"$SHAPES\" IDLE=$IDLE DURATION=$DURATION ROUNDS=$ROUNDS CONNS=$CONNS PROXIES=\"${PROXIES# }\" FLOORS=\"$FLOORS\"${HAPROXY_SPLICE:+ HAPROXY_SPLICE=$HAPROXY_SPLICE} loadtest/run.sh\`"
    echo "- wrk: \`taskset -c $CLIENT_CPU wrk -t1 -cN -d${DURATION}s --latency -s loadtest/tail.lua [-H 'Connection: close'] http://127.0.0.1:PORT/PATH\`"
    echo "- machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), kernel $(uname -r)"
    echo "- load average at start: $LOADAVG_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- proxies and the relay pinned to core $PROXY_CPU (one worker each); backend nginx and wrk on core $CLIENT_CPU"
    echo "- floor lines: \`backend\` is wrk straight at the backend (CPU: the backend's), \`relay\` is loadtest/relay, \`relay-http\` is loadtest/relay --http, \`relay-splice\` is loadtest/relay --splice"
    echo "- versions: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), $("$HAPROXY" -v 2>/dev/null | head -1 | awk '{print "haproxy " $3}'), ringfront $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    python3 - "$OUT/raw.csv" "$IDLE" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
idle = int(sys.argv[2])
shapes = list(dict.fromkeys(r["shape"] for r in rows))
about = {
    "keepalive": "keep-alive, small responses",
    "logged": "keep-alive, small responses, an access-log line each (combined, to a file)",
    "close": "a new connection per request (Connection: close, 16 connections)",
    "body64k": "64 KiB responses, 16 connections",
    "body1m": "1 MiB responses, 16 connections",
    "idle10k": f"{idle + 100:,} open client connections, 100 of them active",
    "post4k": "keep-alive POSTs with 4 KiB request bodies, small responses",
    "upload1m": "POSTs with 1 MiB request bodies, small responses, 16 connections",
    "busy1k": "keep-alive, small responses, 1,000 connections",
}
def lat(us):
    return f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"
for shape in shapes:
    srows = [r for r in rows if r["shape"] == shape]
    order = list(dict.fromkeys(r["proxy"] for r in srows))
    def med(p, f):
        return statistics.median(f(r) for r in srows if r["proxy"] == p)
    def ticks(r, field):
        # the backend floor's own CPU is the backend's
        t = r["backend_ticks"] if r["proxy"] == "backend" and field == "proxy_ticks" else r[field]
        return int(t) / int(r["clk_tck"]) * 1e6 / max(int(r["requests"]), 1)
    cpu = {p: med(p, lambda r: ticks(r, "proxy_ticks")) for p in order}
    n = len({r["round"] for r in srows})
    print(f"## {shape}: {about.get(shape, shape)}\n")
    print(f"Medians over {n} round(s).\n")
    print("| proxy | requests/s | MB/s | p50 | p98 | p99 | p99.9 | CPU µs/req | user µs/req | vs nginx | vs haproxy | vs relay |" + (" vs relay-http |" if "relay-http" in cpu else "") + " RSS | errors | SYNs dropped |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if "relay-http" in cpu else "") + "---:|---:|---:|")
    for p in order:
        rps = med(p, lambda r: float(r["rps"]))
        mbs = med(p, lambda r: float(r["transfer_bps"]) / 1e6)
        p50 = med(p, lambda r: float(r["p50_us"]))
        p99 = med(p, lambda r: float(r["p99_us"]))
        p98 = med(p, lambda r: float(r["p98_us"]))
        p999 = med(p, lambda r: float(r["p999_us"]))
        user = "" if p == "backend" else f"{med(p, lambda r: ticks(r, 'proxy_uticks')):.2f}"
        rss = "" if p == "backend" else f"{med(p, lambda r: int(r['rss_kb'])) / 1024:.1f} MiB"
        err = sum(int(r["errors"]) + int(r["non2xx"]) for r in srows if r["proxy"] == p)
        drops = sum(int(r.get("listen_drops") or 0) for r in srows if r["proxy"] == p)
        rel = lambda b: f"{cpu[p] / cpu[b]:.2f}×" if b in cpu and b != p else ""
        print(f"| {p} | {rps:,.0f} | {mbs:,.1f} | {lat(p50)} | {lat(p98)} | {lat(p99)} | {lat(p999)} | {cpu[p]:.2f} | {user} | {rel('nginx')} | {rel('haproxy')} | {rel('relay')} |" + (f" {rel('relay-http')} |" if "relay-http" in cpu else "") + f" {rss} | {err} | {drops} |")
    print()
PY
} >"$OUT/results.md"

echo
cat "$OUT/results.md"

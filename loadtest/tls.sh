#!/usr/bin/env bash
# HTTPS load test: ringfront vs nginx vs haproxy terminating TLS on the same ECDSA P-256
# certificate and proxying plain HTTP to the same nginx backend as loadtest/run.sh.
#
# Same machine layout as run.sh: every proxy is ONE worker pinned to PROXY_CPU (default
# core 0); the backend, wrk and the Python client share CLIENT_CPU (default core 1). CPU
# comes from the proxy's /proc/PID/stat (utime + stime, all threads) read around each run.
# Rounds are interleaved (r1: ringfront, nginx, haproxy; r2: ...); tables show medians and
# the per-round spread (min–max).
#
# Shapes (SHAPES, in this order when listed):
#   https-keepalive  wrk -c KA_CONNS over HTTPS keep-alive: one handshake per connection,
#                    then small requests. Metric: proxy CPU µs per request.
#   https-handshake  wrk -c HS_CONNS with `Connection: close`: a new TCP connection and a
#                    FULL handshake per request. Session tickets are switched off and no
#                    session cache is configured on every proxy (wrk reuses its TLS session
#                    on reconnect — SSL_clear keeps it — so with tickets on nearly every
#                    handshake would be a resumption; see the reuse check). Metric:
#                    handshakes per second per core = requests / proxy CPU seconds.
#   https-resume     the same wrk command with every proxy's defaults (tickets on): what
#                    wrk measures out of the box, i.e. ticket resumptions. Not in the
#                    default list.
#   https-idle       memory per idle TLS connection: a Python client (ssl module) opens
#                    IDLE_CONNS connections, each completes a handshake and one keep-alive
#                    request, then sits idle; (VmRSS with them − VmRSS before) / IDLE_CONNS.
#                    A fresh proxy process per measurement, MEM_ROUNDS interleaved rounds.
# Before the measured rounds of https-handshake and https-resume, each proxy runs once with
# an access log ($ssl_protocol $ssl_cipher $ssl_session_reused, haproxy's
# %[ssl_fc_is_resumed]) for REUSE_CHECK seconds of the same wrk command; the table of
# protocols, ciphers and full/resumed handshakes goes into the results (0 = skip).
#
# Knobs (environment): SHAPES="https-keepalive https-handshake https-idle", DURATION=10,
# ROUNDS=5, WARMUP=2, KA_CONNS=50, HS_CONNS=16, IDLE_CONNS=3000, IDLE_BATCH=100, SETTLE=3,
# MEM_ROUNDS=3, REUSE_CHECK=2, TLS_PROTOCOLS="TLSv1.2 TLSv1.3" (ssl_protocols of every
# proxy; nginx 1.22's default lacks TLSv1.3), PROXIES="ringfront nginx haproxy",
# MEM_PROXIES=$PROXIES, PROXY_CPU=0, CLIENT_CPU=1, SKIP_BUILD=1, RINGFRONT_BIN,
# BACKEND_PORT=19400 RINGFRONT_PORT=18481 NGINX_PORT=18482 HAPROXY_PORT=18483 (loopback;
# the script refuses to start when one is taken).
#
# Output: the tables on stdout and in loadtest/out/tls.md; raw numbers, configs, logs, wrk
# reports, the certificate and key in loadtest/out/tls/. Only loopback addresses are used;
# every run is bounded in time and every process started here is stopped on exit.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/loadtest/out/tls"
SUMMARY="$ROOT/loadtest/out/tls.md"
SHAPES=${SHAPES:-https-keepalive https-handshake https-idle}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-2}
KA_CONNS=${KA_CONNS:-50}
HS_CONNS=${HS_CONNS:-16}
IDLE_CONNS=${IDLE_CONNS:-3000}
IDLE_BATCH=${IDLE_BATCH:-100}
SETTLE=${SETTLE:-3}
MEM_ROUNDS=${MEM_ROUNDS:-3}
REUSE_CHECK=${REUSE_CHECK:-2}
TLS_PROTOCOLS=${TLS_PROTOCOLS:-TLSv1.2 TLSv1.3}
PROXIES=${PROXIES:-ringfront nginx haproxy}
MEM_PROXIES=${MEM_PROXIES:-$PROXIES}
PROXY_CPU=${PROXY_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
RINGFRONT_BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
NGINX=${NGINX:-/usr/sbin/nginx}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
WRK=${WRK:-wrk}

BACKEND_PORT=${BACKEND_PORT:-19400}
declare -A PORT=([ringfront]=${RINGFRONT_PORT:-18481} [nginx]=${NGINX_PORT:-18482} [haproxy]=${HAPROXY_PORT:-18483})
declare -A PID=()
BACKEND_PID=

LOG_TAG=tls
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
stop_proxies() {
    local p
    for p in "${!PID[@]}"; do
        stop_pid "${PID[$p]}"
        unset "PID[$p]"
    done
}
cleanup() {
    stop_proxies
    [[ -n $BACKEND_PID ]] && stop_pid "$BACKEND_PID"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in taskset "$WRK" curl python3 getconf openssl timeout; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
[[ -x $NGINX ]] || die "nginx not found at $NGINX (the backend needs it)"
NCPU=$(nproc)
((PROXY_CPU < NCPU && CLIENT_CPU < NCPU)) || die "need cores $PROXY_CPU and $CLIENT_CPU; this machine has $NCPU"
CLK_TCK=$(getconf CLK_TCK)
want() { [[ " $SHAPES " == *" $1 "* ]]; }
for s in $SHAPES; do
    case $s in https-keepalive | https-handshake | https-resume | https-idle) ;; *) die "unknown shape '$s'" ;; esac
done
for p in $PROXIES $MEM_PROXIES; do
    case $p in
    ringfront | nginx) ;;
    haproxy) [[ -x $HAPROXY ]] || die "haproxy not found at $HAPROXY" ;;
    *) die "unknown proxy '$p'" ;;
    esac
done

if want https-idle; then
    NOFILE_WANT=$((IDLE_CONNS + 1000))
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    if (($(ulimit -n) < NOFILE_WANT)); then
        ulimit -n "$NOFILE_WANT" 2>/dev/null || die "ulimit -n is $(ulimit -n); $IDLE_CONNS connections need $NOFILE_WANT"
    fi
fi

# utime + stime in clock ticks (all threads), fields 14 and 15 of /proc/PID/stat.
cpu_ticks() {
    local stat
    stat=$(<"/proc/$1/stat")
    awk '{ print $12 + $13 }' <<<"${stat##*) }"
}

rm -rf "$OUT"
mkdir -p "$OUT"
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE_START=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')
DIRTY=$(cd "$ROOT" && git status --porcelain --untracked-files=no 2>/dev/null | wc -l)

if [[ " $PROXIES $MEM_PROXIES " == *" ringfront "* ]]; then
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        log "building ringfront (release)"
        (cd "$ROOT" && cargo build --release -p ringfront) >"$OUT/build.log" 2>&1 || {
            tail -20 "$OUT/build.log" >&2
            die "cargo build --release -p ringfront failed (see $OUT/build.log)"
        }
    fi
    [[ -x $RINGFRONT_BIN ]] || die "no ringfront binary at $RINGFRONT_BIN"
fi

for port in "$BACKEND_PORT" "${PORT[ringfront]}" "${PORT[nginx]}" "${PORT[haproxy]}"; do
    port_free "$port" || die "127.0.0.1:$port is already in use"
done

# ---------------------------------------------------------------- certificate
# One ECDSA P-256 key and a self-signed certificate for localhost / 127.0.0.1, used by all
# three proxies (haproxy takes the certificate and key in one file).
CERT="$OUT/cert.pem"
KEY="$OUT/key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 7 \
    -keyout "$KEY" -out "$CERT" -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$OUT/openssl.log" 2>&1 ||
    die "openssl req failed (see $OUT/openssl.log)"
cat "$CERT" "$KEY" >"$OUT/haproxy.pem"
CERT_TEXT=$(openssl x509 -in "$CERT" -noout -text | sed -n 's/^ *\(Public Key Algorithm\|NIST CURVE\|Signature Algorithm\): */\1: /p' | sort -u | paste -sd';' -)

# ---------------------------------------------------------------- backend
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
for ((i = 0; i < 100; i++)); do
    [[ $(curl -s --max-time 1 "http://127.0.0.1:$BACKEND_PORT/" 2>/dev/null) == "hello from backend" ]] && break
    kill -0 "$BACKEND_PID" 2>/dev/null || die "backend did not start"
    sleep 0.1
done
log "backend nginx pid $BACKEND_PID on 127.0.0.1:$BACKEND_PORT (core $CLIENT_CPU)"

# ---------------------------------------------------------------- proxies
# A "mode" selects the per-shape settings:
#   tickets: session tickets on (every proxy's default) or off (https-handshake)
#   idle:    worker_connections / maxconn 20000, keep-alive timeout 300 s (https-idle)
#   log:     an access log with the TLS session fields (reuse checks only)
# Common to all: one worker, TLS_PROTOCOLS, no session cache configured (nginx's and
# ringfront's default is none; haproxy's default cache is kept except with tickets off,
# where `tune.ssl.cachesize 0` removes the other way to resume), upstream keep-alive 64.
MODE_TICKETS=on MODE_IDLE=0 MODE_LOG=0

start_ringfront() {
    local d="$OUT/ringfront" wc=1024 extra=""
    mkdir -p "$d"
    ((MODE_IDLE)) && wc=20000
    [[ $MODE_TICKETS == off ]] && extra+="        ssl_session_tickets off;"$'\n'
    local logs="    access_log off;"
    ((MODE_LOG)) && logs="    log_format tls '\$ssl_protocol \$ssl_cipher - \$ssl_session_reused \$status';
    access_log $d/access.log tls;"
    cat >"$d/ringfront.conf" <<EOF
worker_processes 1;
error_log $d/error.log warn;
events { worker_connections $wc; }
http {
$logs
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[ringfront]} ssl;
        ssl_certificate $CERT;
        ssl_certificate_key $KEY;
        ssl_protocols $TLS_PROTOCOLS;
$extra        location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
EOF
    taskset -c "$PROXY_CPU" "$RINGFRONT_BIN" -c "$d/ringfront.conf" --workers 1 \
        --cpu-affinity "$PROXY_CPU" >"$d/stdout.log" 2>"$d/stderr.log" &
    PID[ringfront]=$!
}

start_nginx() {
    local d="$OUT/nginx" wc=1024 extra=""
    mkdir -p "$d/logs"
    ((MODE_IDLE)) && wc=20000
    [[ $MODE_TICKETS == off ]] && extra+="        ssl_session_tickets off;"$'\n'
    local logs="    access_log off;"
    ((MODE_LOG)) && logs="    log_format tls '\$ssl_protocol \$ssl_cipher \$ssl_curve \$ssl_session_reused \$status';
    access_log $d/access.log tls;"
    cat >"$d/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/logs/error.log warn;
events { worker_connections $wc; }
http {
$logs
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$BACKEND_PORT; keepalive 64; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:${PORT[nginx]} ssl;
        ssl_certificate $CERT;
        ssl_certificate_key $KEY;
        ssl_protocols $TLS_PROTOCOLS;
$extra        location / {
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
    local d="$OUT/haproxy" maxconn=4096 bindopt="" glob="" logs=""
    mkdir -p "$d"
    ((MODE_IDLE)) && maxconn=$((IDLE_CONNS + 1000))
    if [[ $MODE_TICKETS == off ]]; then
        bindopt=" no-tls-tickets"
        glob="    tune.ssl.cachesize 0"
    fi
    local minv=${TLS_PROTOCOLS%% *} maxv=${TLS_PROTOCOLS##* }
    bindopt+=" ssl-min-ver ${minv} ssl-max-ver ${maxv}"
    if ((MODE_LOG)); then
        glob+=$'\n'"    log stdout format raw local0 info"
        logs="    log global"$'\n'"    log-format \"%[ssl_fc_protocol] %[ssl_fc_cipher] - %[ssl_fc_is_resumed] %ST\""
    fi
    cat >"$d/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn $maxconn
$glob
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 300s
    timeout server 30s
    timeout http-keep-alive 300s
frontend f
    bind 127.0.0.1:${PORT[haproxy]} ssl crt $OUT/haproxy.pem$bindopt
$logs
    default_backend b
backend b
    server s1 127.0.0.1:$BACKEND_PORT
EOF
    taskset -c "$PROXY_CPU" "$HAPROXY" -db -f "$d/haproxy.cfg" >"$d/stdout.log" 2>"$d/stderr.log" &
    PID[haproxy]=$!
}

wait_https() {
    local port=$1 pid=$2 i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if [[ $(curl -sk --max-time 1 "https://127.0.0.1:$port/" 2>/dev/null) == "hello from backend" ]]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

start_proxy() { # proxy
    "start_$1"
    wait_https "${PORT[$1]}" "${PID[$1]}" || {
        tail -20 "$OUT/$1/stderr.log" >&2 || true
        die "$1 did not answer on https://127.0.0.1:${PORT[$1]}/"
    }
}

# Versions and what each side negotiates, for the header.
VERSIONS="$("$NGINX" -v 2>&1 | sed 's/^nginx version: //') ($("$NGINX" -V 2>&1 | sed -n 's/^built with \(OpenSSL [^ ]*\).*running with \(OpenSSL [^ ]*\).*/built with \1, running \2/p')), $("$HAPROXY" -vv 2>/dev/null | awk '/^HAProxy version/ {v=$3} /Running on OpenSSL version/ {o=$7} END {print "haproxy " v " (OpenSSL " o ")"}'), $("$WRK" -v 2>&1 | head -1 | awk '{print "wrk " $2}') with $(openssl version | awk '{print $1 " " $2}')"

# ---------------------------------------------------------------- wrk shapes
RAW="$OUT/raw.csv"
echo "shape,round,proxy,requests,seconds,rps,p50_us,p99_us,errors,non2xx,proxy_ticks,backend_ticks,clk_tck" >"$RAW"
REUSE="$OUT/reuse.csv"
echo "shape,proxy,protocol,cipher,curve,resumed,status,count" >"$REUSE"

run_wrk() { # shape proxy seconds report-file
    local conns=$KA_CONNS hdr=()
    if [[ $1 != https-keepalive ]]; then
        conns=$HS_CONNS
        hdr=(-H "Connection: close")
    fi
    timeout $(($3 + 30)) taskset -c "$CLIENT_CPU" "$WRK" -t1 -c"$conns" -d"${3}s" --latency "${hdr[@]}" \
        "https://127.0.0.1:${PORT[$2]}/" >"$4" 2>&1
}

parse_wrk() { # report shape round proxy ticks bticks
    local wrk
    wrk=$(wrk_fields "$1" requests seconds rps p50_us p99_us errors non2xx) || return 1
    echo "$2,$3,$4,$wrk,$5,$6,$CLK_TCK"
}

# Short run of the shape's wrk command against each proxy started with an access log;
# counts full and resumed handshakes (one log line per request = per connection here).
reuse_check() { # shape
    local shape=$1 p
    MODE_LOG=1
    for p in $PROXIES; do
        start_proxy "$p"
        run_wrk "$shape" "$p" "$REUSE_CHECK" "$OUT/wrk-$shape-$p-reuse.txt"
        stop_pid "${PID[$p]}"
        unset "PID[$p]"
        local f="$OUT/$p/access.log"
        [[ $p == haproxy ]] && f="$OUT/$p/stdout.log"
        python3 - "$shape" "$p" "$f" >>"$REUSE" <<'PY'
import collections, sys
shape, proxy, path = sys.argv[1:]
c = collections.Counter()
for line in open(path, errors="replace"):
    f = line.split()
    if len(f) != 5:
        continue
    proto, cipher, curve, reused, status = f
    # nginx/ringfront: r or .; haproxy: 1 or 0.
    c[(proto, cipher, curve, "yes" if reused in ("r", "1") else "no", status)] += 1
for k, v in sorted(c.items()):
    print(",".join((shape, proxy) + k + (str(v),)))
PY
        mv "$f" "$OUT/$p/reuse-$shape.log"
    done
    MODE_LOG=0
}

wrk_shape() { # shape
    local shape=$1 p r
    MODE_IDLE=0
    MODE_TICKETS=on
    [[ $shape == https-handshake ]] && MODE_TICKETS=off
    ((REUSE_CHECK > 0)) && [[ $shape != https-keepalive ]] && reuse_check "$shape"
    for p in $PROXIES; do
        start_proxy "$p"
        log "$shape: $p pid ${PID[$p]} on 127.0.0.1:${PORT[$p]} (core $PROXY_CPU, tickets $MODE_TICKETS)"
    done
    if ((WARMUP > 0)); then
        for p in $PROXIES; do
            run_wrk "$shape" "$p" "$WARMUP" "$OUT/wrk-$shape-$p-warmup.txt"
        done
    fi
    for ((r = 1; r <= ROUNDS; r++)); do
        for p in $PROXIES; do
            local report="$OUT/wrk-$shape-$p-r$r.txt" c0 c1 b0 b1
            log "$shape round $r/$ROUNDS: $p (${DURATION}s)"
            c0=$(cpu_ticks "${PID[$p]}")
            b0=$(cpu_ticks "$BACKEND_PID")
            run_wrk "$shape" "$p" "$DURATION" "$report"
            c1=$(cpu_ticks "${PID[$p]}")
            b1=$(cpu_ticks "$BACKEND_PID")
            kill -0 "${PID[$p]}" 2>/dev/null || die "$p died during $shape round $r"
            parse_wrk "$report" "$shape" "$r" "$p" $((c1 - c0)) $((b1 - b0)) >>"$RAW"
        done
    done
    stop_proxies
}

for s in https-keepalive https-handshake https-resume; do
    want "$s" && wrk_shape "$s"
done

# ---------------------------------------------------------------- idle TLS connections
cat >"$OUT/idle_tls_client.py" <<'PY'
# Opens N TLS connections in batches; each completes a full handshake (a fresh SSLSocket,
# no session offered) and one keep-alive GET whose whole response is read, then sits idle.
# Prints one JSON object with the proxy's VmRSS before / with the connections / after.
import json, os, socket, ssl, sys, time

port, pid, n, batch, settle = (int(a) for a in sys.argv[1:6])
REQ = b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: tls-idle\r\n\r\n"
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

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
socks, failures, not_200, closing, protos, reused = [], 0, 0, 0, {}, 0
t0 = time.monotonic()
for start in range(0, n, batch):
    group = []
    for _ in range(min(batch, n - start)):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.settimeout(10)
        try:
            raw.connect(("127.0.0.1", port))
            s = ctx.wrap_socket(raw, server_hostname="localhost")
            s.sendall(REQ)
            group.append(s)
        except OSError:
            failures += 1
            raw.close()
    for s in group:
        try:
            code, close = read_response(s)
        except (OSError, ValueError, ConnectionError):
            failures += 1
            s.close()
            continue
        not_200 += code != 200
        closing += close
        reused += s.session_reused
        v = s.version()
        protos[v] = protos.get(v, 0) + 1
        socks.append(s)
open_secs = time.monotonic() - t0
time.sleep(settle)
rss_after, hwm_after, fds_after = status("VmRSS"), status("VmHWM"), nfds()
still_open = 0
for s in socks:
    s.setblocking(False)
    try:
        s.recv(1)
    except ssl.SSLWantReadError:
        still_open += 1
    except OSError:
        pass
for s in socks:
    s.close()
time.sleep(settle)
rss_closed, fds_closed = status("VmRSS"), nfds()
print(json.dumps(dict(
    conns=n, served=len(socks), failures=failures, not_200=not_200, closing=closing,
    still_open=still_open, reused=reused, protocols=protos, open_secs=round(open_secs, 2),
    rss_before_kb=rss_before, rss_after_kb=rss_after, hwm_after_kb=hwm_after,
    rss_closed_kb=rss_closed, fds_before=fds_before, fds_after=fds_after,
    fds_closed=fds_closed, bytes_per_conn=round((rss_after - rss_before) * 1024 / n, 1),
)))
PY

MEM="$OUT/memory.jsonl"
: >"$MEM"
if want https-idle; then
    MODE_IDLE=1
    MODE_TICKETS=on
    for ((r = 1; r <= MEM_ROUNDS; r++)); do
        for p in $MEM_PROXIES; do
            start_proxy "$p"
            log "https-idle round $r/$MEM_ROUNDS: $p pid ${PID[$p]}: $IDLE_CONNS idle TLS connections"
            timeout $((IDLE_CONNS / 10 + 4 * SETTLE + 120)) taskset -c "$CLIENT_CPU" python3 \
                "$OUT/idle_tls_client.py" "${PORT[$p]}" "${PID[$p]}" "$IDLE_CONNS" "$IDLE_BATCH" "$SETTLE" \
                >"$OUT/idle-$p-r$r.json" || die "idle client failed against $p"
            kill -0 "${PID[$p]}" 2>/dev/null || die "$p died during the idle-connection test"
            python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d.update(proxy=sys.argv[2], round=int(sys.argv[3])); print(json.dumps(d))' \
                "$OUT/idle-$p-r$r.json" "$p" "$r" >>"$MEM"
            log "$p: $(cat "$OUT/idle-$p-r$r.json")"
            stop_pid "${PID[$p]}"
            unset "PID[$p]"
        done
    done
fi

# ---------------------------------------------------------------- tables
{
    echo "# ringfront HTTPS load test results"
    echo
    echo "- date: $DATE_START"
    echo "- command: \`SHAPES=\"$SHAPES\" DURATION=$DURATION ROUNDS=$ROUNDS KA_CONNS=$KA_CONNS HS_CONNS=$HS_CONNS IDLE_CONNS=$IDLE_CONNS MEM_ROUNDS=$MEM_ROUNDS loadtest/tls.sh\`"
    echo "- ringfront: $RINGFRONT_BIN (built $(date -u -r "$RINGFRONT_BIN" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo '?')); tree at commit $COMMIT$( ((DIRTY > 0)) && echo " (+$DIRTY modified tracked files)")"
    echo "- versions: $VERSIONS"
    echo "- certificate: self-signed, $CERT_TEXT; ssl_protocols $TLS_PROTOCOLS everywhere"
    echo "- machine: $NCPU CPUs, $(lscpu | sed -n 's/^Model name: *//p'), kernel $(uname -r)"
    echo "- proxies pinned to core $PROXY_CPU (one worker each); backend nginx, wrk and the Python client on core $CLIENT_CPU"
    echo "- load average at start: $LOADAVG_START; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    python3 - "$RAW" "$REUSE" "$MEM" "$KA_CONNS" "$HS_CONNS" "$DURATION" "$CLIENT_CPU" <<'PY'
import csv, json, statistics, sys
raw, reuse, mem, ka, hs, dur, ccpu = sys.argv[1:]
rows = list(csv.DictReader(open(raw)))
def spread(vals, fmt):
    vals = sorted(vals)
    return f"{fmt(statistics.median(vals))} ({fmt(vals[0])}–{fmt(vals[-1])})"
f0 = lambda v: f"{v:,.0f}"
f2 = lambda v: f"{v:.2f}"
def lat(us):
    return f"{us:.0f} µs" if us < 1000 else f"{us / 1000:.2f} ms"
for shape in ("https-keepalive", "https-handshake", "https-resume"):
    sr = [r for r in rows if r["shape"] == shape]
    if not sr:
        continue
    order = list(dict.fromkeys(r["proxy"] for r in sr))
    n = len({r["round"] for r in sr})
    cpu_s = lambda r: int(r["proxy_ticks"]) / int(r["clk_tck"])
    per = {p: [r for r in sr if r["proxy"] == p] for p in order}
    if shape == "https-keepalive":
        print(f"\n## https-keepalive: small responses over HTTPS keep-alive ({ka} connections)\n")
        print(f"`taskset -c {ccpu} wrk -t1 -c{ka} -d{dur}s --latency https://127.0.0.1:PORT/`; "
              f"medians over {n} rounds, (min–max) over rounds.\n")
        us = {p: [cpu_s(r) * 1e6 / max(int(r["requests"]), 1) for r in per[p]] for p in order}
        base = statistics.median(us["nginx"]) if "nginx" in us else None
        print("| proxy | requests/s | p50 | p99 | CPU µs/request | vs nginx | proxy CPU % | errors |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for p in order:
            m = statistics.median(us[p])
            busy = [cpu_s(r) / float(r["seconds"]) * 100 for r in per[p]]
            err = sum(int(r["errors"]) + int(r["non2xx"]) for r in per[p])
            print(f"| {p} | {spread([float(r['rps']) for r in per[p]], f0)} "
                  f"| {lat(statistics.median(float(r['p50_us']) for r in per[p]))} "
                  f"| {lat(statistics.median(float(r['p99_us']) for r in per[p]))} "
                  f"| {spread(us[p], f2)} | {f'{m / base:.2f}×' if base else 'n/a'} "
                  f"| {statistics.median(busy):.0f} | {err} |")
    else:
        what = "full handshakes, tickets off, no session cache" if shape == "https-handshake" else "every proxy's defaults: wrk resumes with tickets"
        print(f"\n## {shape}: a new connection and handshake per request ({hs} connections; {what})\n")
        print(f"`taskset -c {ccpu} wrk -t1 -c{hs} -d{dur}s --latency -H 'Connection: close' https://127.0.0.1:PORT/`; "
              f"handshakes/s per core = requests / proxy CPU seconds; medians over {n} rounds, (min–max).\n")
        hps = {p: [int(r["requests"]) / max(cpu_s(r), 1e-9) for r in per[p]] for p in order}
        base = statistics.median(hps["nginx"]) if "nginx" in hps else None
        print("| proxy | handshakes/s (wrk) | proxy CPU % | handshakes/s per core | vs nginx | CPU µs/handshake | p50 | errors |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for p in order:
            m = statistics.median(hps[p])
            busy = [cpu_s(r) / float(r["seconds"]) * 100 for r in per[p]]
            err = sum(int(r["errors"]) + int(r["non2xx"]) for r in per[p])
            print(f"| {p} | {spread([float(r['rps']) for r in per[p]], f0)} | {statistics.median(busy):.0f} "
                  f"| {spread(hps[p], f0)} | {f'{m / base:.2f}×' if base else 'n/a'} | {1e6 / m:.0f} "
                  f"| {lat(statistics.median(float(r['p50_us']) for r in per[p]))} | {err} |")
rr = list(csv.DictReader(open(reuse)))
if rr:
    print("\n## What was negotiated (reuse check: the same wrk command, a short run with an access log)\n")
    print("| shape | proxy | protocol | cipher | group | resumed | status | requests |")
    print("|---|---|---|---|---|---|---|---:|")
    for r in rr:
        print(f"| {r['shape']} | {r['proxy']} | {r['protocol']} | {r['cipher']} | {r['curve']} | {r['resumed']} | {r['status']} | {int(r['count']):,} |")
ms = [json.loads(l) for l in open(mem) if l.strip()]
if ms:
    n = ms[0]["conns"]
    order = list(dict.fromkeys(m["proxy"] for m in ms))
    rounds = len({m["round"] for m in ms})
    print(f"\n## https-idle: memory per idle TLS connection ({n:,} connections)\n")
    print("Each connection: full handshake (Python `ssl`, no session offered), one keep-alive `GET /`, then idle; "
          f"bytes/conn = (VmRSS with them − VmRSS before) / connections; a fresh proxy per measurement, medians over {rounds} rounds, (min–max).\n")
    per = {p: [m for m in ms if m["proxy"] == p] for p in order}
    base = statistics.median(m["bytes_per_conn"] for m in per["nginx"]) if "nginx" in per else None
    kib = lambda v: f"{v / 1024:.1f} MiB"
    print("| proxy | RSS before | RSS with idle conns | RSS after close | bytes/conn | vs nginx | served / still open | protocol | resumed |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for p in order:
        b = [m["bytes_per_conn"] for m in per[p]]
        med = lambda k: statistics.median(m[k] for m in per[p])
        protos = ", ".join(sorted({k for m in per[p] for k in m["protocols"]}))
        print(f"| {p} | {kib(med('rss_before_kb'))} | {kib(med('rss_after_kb'))} | {kib(med('rss_closed_kb'))} "
              f"| {spread(b, f0)} | {f'{statistics.median(b) / base:.2f}×' if base else 'n/a'} "
              f"| {min(m['served'] for m in per[p]):,} / {min(m['still_open'] for m in per[p]):,} | {protos} "
              f"| {sum(m['reused'] for m in per[p])} |")
    bad = sorted({m["proxy"] for m in ms if m["failures"] or m["not_200"] or m["closing"] or m["served"] != m["still_open"]})
    if bad:
        print(f"\n**Warning:** failed, non-200, `Connection: close` or dropped connections with: {', '.join(bad)} (see memory.jsonl).")
PY
} >"$SUMMARY"

echo
cat "$SUMMARY"

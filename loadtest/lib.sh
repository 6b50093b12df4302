# Helpers the load-test scripts share; source it after setting LOG_TAG (the prefix of
# messages on stderr).

log() { printf '%s: %s\n' "${LOG_TAG:-loadtest}" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# True when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The kernel's counter NAME in section SECTION of FILE (/proc/net/netstat or /proc/net/snmp,
# whose sections are a line of names and a line of values): e.g. `net_counter
# /proc/net/netstat TcpExt ListenDrops`, the connections any listener dropped for a full
# accept queue (each such SYN is sent again a second later).
net_counter() { # file section name
    awk -v s="$2:" -v n="$3" '$1 == s { if (!h) { for (i = 2; i <= NF; i++) if ($i == n) c = i; h = 1 } else print $c }' "$1"
}

# Writes DIR/backend.conf: the one-worker nginx backend the A/B scripts proxy to, on
# 127.0.0.1:PORT, answering every request with a 19-byte body from memory.
# The backend also serves /64k and /1m, 64 KiB and 1 MiB bodies from files in DIR (page
# cache, sendfile), as run.sh's body64k and body1m shapes do.
write_backend_conf() {
    head -c 65536 /dev/zero | tr '\0' 'a' >"$1/64k"
    head -c 1048576 /dev/zero | tr '\0' 'b' >"$1/1m"
    cat >"$1/backend.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $1/backend.pid;
error_log $1/backend.err warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000; sendfile on;
  server { listen 127.0.0.1:$2; location / { return 200 "hello from backend\n"; }
    location /64k { root $1; default_type application/octet-stream; rewrite ^ /64k break; }
    location /1m { root $1; default_type application/octet-stream; rewrite ^ /1m break; } } }
CONF
}

# Writes DIR/ringfront.conf and DIR/nginx.conf: each proxy with one worker on
# 127.0.0.1:PORT in front of the backend on BACKEND_PORT, with pooled upstream connections
# (instructions.sh and ops.sh measure the same configurations). With ACCESS_LOG=1 both
# write nginx's default access log (`combined`) to DIR/NAME-access.log, with ACCESS_LOG=timing
# a line of `$request_time $upstream_response_time` per request there; with FORWARDED=1 both
# send the four fields an edge proxy usually sets (Host, X-Real-IP, X-Forwarded-For and
# X-Forwarded-Proto, from variables); EXTRA="directives" adds any to both locations.
write_proxy_confs() {
    local rf_log="" ng_log="access_log off;" fwd=""
    if [[ ${ACCESS_LOG:-0} == 1 ]]; then
        rf_log="access_log $1/ringfront-access.log;" ng_log="access_log $1/nginx-access.log;"
    elif [[ ${ACCESS_LOG:-0} == timing ]]; then
        local fmt="log_format timing '\$request_time \$upstream_response_time';"
        rf_log="$fmt access_log $1/ringfront-access.log timing;"
        ng_log="$fmt access_log $1/nginx-access.log timing;"
    fi
    if [[ ${FORWARDED:-0} == 1 ]]; then
        fwd='proxy_set_header Host $host; proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;'
    fi
    cat >"$1/ringfront.conf" <<CONF
worker_processes 1;
events { worker_connections 1024; }
http { keepalive_requests 1000000; $rf_log
    upstream b { server 127.0.0.1:$3; keepalive 64; keepalive_requests 1000000; }
    server { listen 127.0.0.1:$2; location / { proxy_pass http://b;
        proxy_http_version 1.1; proxy_set_header Connection ""; $fwd ${EXTRA:-} } } }
CONF
    cat >"$1/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $1/nginx.pid;
error_log $1/nginx.err warn;
events { worker_connections 1024; }
http { $ng_log keepalive_requests 1000000;
    upstream b { server 127.0.0.1:$3; keepalive 64; keepalive_requests 1000000; }
    server { listen 127.0.0.1:$2; location / { proxy_pass http://b;
        proxy_http_version 1.1; proxy_set_header Connection ""; $fwd ${EXTRA:-} } } }
CONF
}

# Makes OUT (a scratch directory, removed at exit with every process in PIDS) with the
# backend and proxy confs (BACKEND_PORT, PORT), and starts the backend, pinned to CPU when
# one is given.
start_scratch_backend() { # [cpu]
    [[ -x /usr/sbin/nginx ]] || die "needs nginx (the backend): apt-get install -y nginx"
    command -v wrk >/dev/null || die "needs wrk: apt-get install -y wrk"
    OUT=$(mktemp -d)
    PIDS=()
    trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$OUT"' EXIT
    write_backend_conf "$OUT" "$BACKEND_PORT"
    write_proxy_confs "$OUT" "$PORT" "$BACKEND_PORT"
    local pin=()
    [[ -n ${1:-} ]] && pin=(taskset -c "$1")
    "${pin[@]}" /usr/sbin/nginx -p "$OUT/" -c "$OUT/backend.conf" -e "$OUT/backend.err" &
    PIDS+=($!)
}

# Waits up to TENTHS tenths of a second until 127.0.0.1:PORT answers a request; otherwise
# prints LOG and stops the script.
wait_serving() { # name log tenths
    local _
    for _ in $(seq "$3"); do
        curl -sf "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$2" >&2
    die "$1 did not start"
}

# The command line of proxy NAME for the confs above (OUT, PORT, BACKEND_PORT, RINGFRONT_BIN
# and RELAY_BIN set by the caller).
command_of() {
    case $1 in
    ringfront) echo "$RINGFRONT_BIN -c $OUT/ringfront.conf --workers 1" ;;
    nginx) echo "/usr/sbin/nginx -p $OUT/ -c $OUT/nginx.conf -e $OUT/nginx.err" ;;
    relay) echo "$RELAY_BIN 127.0.0.1:$PORT 127.0.0.1:$BACKEND_PORT" ;;
    relay-http) echo "$RELAY_BIN --http 127.0.0.1:$PORT 127.0.0.1:$BACKEND_PORT" ;;
    *) die "unknown proxy '$1'" ;;
    esac
}

# Stops the processes PID...: TERM to each, up to a second for each to exit, then KILL.
stop_all() {
    local p
    for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "$@"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}

# The fields of wrk report FILE that loadtest/wrk_report.py is asked for, comma-separated.
wrk_fields() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/wrk_report.py" "$@"
}

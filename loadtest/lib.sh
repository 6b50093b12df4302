# Helpers the load-test scripts share; source it after setting LOG_TAG (the prefix of
# messages on stderr).

log() { printf '%s: %s\n' "${LOG_TAG:-loadtest}" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# True when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Writes DIR/backend.conf: the one-worker nginx backend the A/B scripts proxy to, on
# 127.0.0.1:PORT, answering every request with a 19-byte body from memory.
write_backend_conf() {
    cat >"$1/backend.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $1/backend.pid;
error_log $1/backend.err warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$2; location / { return 200 "hello from backend\n"; } } }
CONF
}

# Helpers the load-test scripts share; source it after setting LOG_TAG (the prefix of
# messages on stderr).

log() { printf '%s: %s\n' "${LOG_TAG:-loadtest}" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# True when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

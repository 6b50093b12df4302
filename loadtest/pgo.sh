#!/usr/bin/env bash
# A profile-guided (PGO) release build of ringfront: an instrumented build serves the
# load-test traffic shapes (keep-alive, Connection: close, 64 KiB and 1 MiB bodies, each
# TRAIN seconds through one worker in front of an nginx backend), llvm-profdata merges what
# it recorded, and a second build uses that profile. The normal release build
# (target/release/ringfront) is untouched: the PGO binary is target/pgo/release/ringfront.
# Code the training never ran (TLS, rewrite, limits, ...) is laid out as cold: it works the
# same, only without the layout gain. Decision and measurements:
# docs/decisions/0020-profile-guided-build.md.
#
# Usage: [TRAIN=5] [LLVM_PROFDATA=llvm-profdata-22] bash loadtest/pgo.sh
# Needs llvm-profdata of rustc's LLVM major (rustc -vV; apt-get install llvm-22), nginx, wrk.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=pgo
# shellcheck source=loadtest/lib.sh
source "$ROOT/loadtest/lib.sh"
TRAIN=${TRAIN:-5}
major=$(rustc -vV | awk '/^LLVM version/ { split($3, v, "."); print v[1] }')
LLVM_PROFDATA=${LLVM_PROFDATA:-llvm-profdata-$major}
command -v "$LLVM_PROFDATA" >/dev/null || die "needs $LLVM_PROFDATA: apt-get install llvm-$major"
BACKEND_PORT=${BACKEND_PORT:-19400} PORT=${PORT:-18400}
PGO=$ROOT/target/pgo
OUT=$(mktemp -d)
BODIES=$(mktemp -d /dev/shm/ringfront-pgo.XXXXXX)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$OUT" "$BODIES"; }
trap cleanup EXIT

log "instrumented build (target/pgo-gen)"
rm -rf "$PGO/raw"
RUSTFLAGS="-Cprofile-generate=$PGO/raw" CARGO_TARGET_DIR=$ROOT/target/pgo-gen \
    cargo build --release -p ringfront --quiet

head -c 65536 /dev/zero | tr '\0' 'a' >"$BODIES/64k"
head -c 1048576 /dev/zero | tr '\0' 'b' >"$BODIES/1m"
cat >"$OUT/backend.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $OUT/backend.pid;
error_log $OUT/backend.err warn;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000; sendfile on;
  server { listen 127.0.0.1:$BACKEND_PORT;
    location / { return 200 "hello from backend\n"; }
    location /64k { root $BODIES; rewrite ^ /64k break; }
    location /1m { root $BODIES; rewrite ^ /1m break; } } }
CONF
write_proxy_confs "$OUT" "$PORT" "$BACKEND_PORT"
/usr/sbin/nginx -p "$OUT/" -c "$OUT/backend.conf" -e "$OUT/backend.err" &
PIDS+=($!)
"$ROOT/target/pgo-gen/release/ringfront" -c "$OUT/ringfront.conf" --workers 1 2>"$OUT/rf.err" &
rf=$!
PIDS+=($rf)
for _ in $(seq 100); do grep -q ready "$OUT/rf.err" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$OUT/rf.err" || { cat "$OUT/rf.err" >&2; die "ringfront did not start"; }
url=http://127.0.0.1:$PORT
log "training: ${TRAIN}s of each shape"
wrk -t1 -c50 -d"${TRAIN}s" "$url/" >/dev/null
wrk -t1 -c16 -d"${TRAIN}s" -H 'Connection: close' "$url/" >/dev/null
wrk -t1 -c16 -d"${TRAIN}s" "$url/64k" >/dev/null
wrk -t1 -c16 -d"${TRAIN}s" "$url/1m" >/dev/null
# A graceful stop: the profile is written when the process exits.
kill -TERM "$rf"
wait "$rf" || true
ls "$PGO"/raw/*.profraw >/dev/null 2>&1 || die "the instrumented build wrote no profile"
"$LLVM_PROFDATA" merge -o "$PGO/ringfront.profdata" "$PGO"/raw/*.profraw

log "optimized build (target/pgo)"
RUSTFLAGS="-Cprofile-use=$PGO/ringfront.profdata" \
    CARGO_TARGET_DIR=$PGO cargo build --release -p ringfront --quiet
log "done: $PGO/release/ringfront"

#!/usr/bin/env bash
# The cost of limit_req (and limit_conn) on every request: one ringfront build A/B'd by
# loadtest/ab.sh against itself, A plain, B with a limit_req zone keyed by the client
# address at a rate so high that nothing is delayed or rejected (all of wrk's requests come
# from 127.0.0.1: one state, updated by compare-and-swap on every request), and with
# LIMIT_CONN=1 a limit_conn as well. Check wrk's output for "Non-2xx" lines: there should be
# none.
#
# Usage: [RINGFRONT_BIN=target/release/ringfront] [LIMIT_CONN=0] [PAIRS=10] [DURATION=5]
#        [CONNS=50] bash loadtest/limit_req.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RINGFRONT_BIN:-$ROOT/target/release/ringfront}
HTTP='limit_req_zone $binary_remote_addr zone=all:1m rate=100000000r/s;'
LOCATION='limit_req zone=all burst=100000000 nodelay;'
if [[ ${LIMIT_CONN:-0} == 1 ]]; then
    HTTP="$HTTP limit_conn_zone \$binary_remote_addr zone=conns:1m;"
    LOCATION="$LOCATION limit_conn conns 65535;"
fi
A=$BIN B=$BIN B_HTTP=$HTTP B_LOCATION=$LOCATION exec bash "$ROOT/loadtest/ab.sh"

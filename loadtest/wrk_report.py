#!/usr/bin/env python3
"""Reads one wrk report (with --latency) and prints the asked fields comma-separated.

Usage: python3 loadtest/wrk_report.py REPORT FIELD [FIELD ...]
Fields: requests, seconds, rps, p50_us, p99_us, transfer_bps, errors (socket errors of
every kind), non2xx; p98_us and p999_us when wrk ran loadtest/tail.lua (else empty). The load-test scripts (run.sh, tls.sh, scaling.sh) share it.
"""
import re
import sys

UNITS_US = {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}
SIZE = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def dur_us(v):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", v)
    if not m:
        raise ValueError(f"not a wrk duration: {v!r}")
    return float(m.group(1)) * UNITS_US[m.group(2)]


def fields(text):
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    if not m:
        raise ValueError("no request count")
    t = re.search(r"Transfer/sec:\s+([\d.]+)(B|KB|MB|GB)", text)
    e = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    n = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    p50 = dur_us(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
    p99 = dur_us(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
    secs = dur_us(m.group(2) + m.group(3)) / 1e6
    tail = re.search(r"^tail_us p90=(\d+) p98=(\d+) p999=(\d+)", text, re.M)
    return {
        "requests": m.group(1),
        "seconds": f"{secs:.3f}",
        "rps": f"{rps:.2f}",
        "p50_us": f"{p50:.1f}",
        "p99_us": f"{p99:.1f}",
        "transfer_bps": f"{float(t.group(1)) * SIZE[t.group(2)]:.0f}" if t else "0",
        "errors": str(sum(int(x) for x in e.groups())) if e else "0",
        "non2xx": n.group(1) if n else "0",
        "p98_us": tail.group(2) if tail else "",
        "p999_us": tail.group(3) if tail else "",
    }


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, wanted = sys.argv[1], sys.argv[2:]
    text = open(path).read()
    try:
        got = fields(text)
    except (ValueError, AttributeError) as e:
        sys.exit(f"cannot parse wrk report {path} ({e}):\n{text}")
    unknown = [f for f in wanted if f not in got]
    if unknown:
        sys.exit(f"unknown field(s) {unknown}; known: {list(got)}")
    print(",".join(got[f] for f in wanted))


if __name__ == "__main__":
    main()

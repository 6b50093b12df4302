#!/usr/bin/env python3
"""Who else ran on the proxy's core: reads `perf script -F time,event,trace` of
sched:sched_switch events recorded on that core and prints how often the proxy (comm
starting with PREFIX) was preempted (switched out runnable), for how long in total and at
most, and every other task that ran there, with its turns and time.

Usage: python3 loadtest/intruders.py SCRIPT.txt PREFIX
"""
import collections
import re
import sys

SWITCH = re.compile(
    r"([\d.]+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=\d+ prev_prio=\d+ "
    r"prev_state=(\S+) ==> next_comm=(.*?) next_pid=\d+"
)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, prefix = sys.argv[1], sys.argv[2]
    events = []
    for line in open(path):
        m = SWITCH.search(line)
        if m:
            events.append((float(m.group(1)), m.group(2), m.group(3), m.group(4)))
    if len(events) < 2:
        sys.exit(f"{path}: fewer than two sched_switch events")
    ran, turns = collections.Counter(), collections.Counter()
    for (t, _, _, nxt), (t2, _, _, _) in zip(events, events[1:]):
        if not nxt.startswith(prefix) and not nxt.startswith("swapper"):
            ran[nxt] += t2 - t
            turns[nxt] += 1
    preempted, out = [], None
    for t, prev, state, nxt in events:
        if out is None and prev.startswith(prefix) and state.startswith("R"):
            out = t
        elif out is not None and nxt.startswith(prefix):
            preempted.append(t - out)
            out = None
    span = events[-1][0] - events[0][0]
    longest = max(preempted, default=0)
    print(
        f"{span:.2f} s recorded: the proxy was preempted {len(preempted)} times, "
        f"{sum(preempted) * 1e3:.1f} ms in all, the longest {longest * 1e3:.2f} ms, "
        f"{sum(1 for p in preempted if p > 5e-4)} of them over 0.5 ms"
    )
    for comm, secs in ran.most_common(8):
        print(f"  {comm}: {turns[comm]} turns, {secs * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

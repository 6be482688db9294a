#!/usr/bin/env python3
"""What the slowest round trips of an EnginePingPong run are made of.

usage: breakdown.py SLOW_FILE ROUND_TRIPS [SAFEPOINT_LOG ...]

SLOW_FILE is what `EnginePingPong --slow-dump PREFIX` wrote for one mode (start_ns end_ns rtt_ns side); ROUND_TRIPS the
measured round trips (--messages); the safepoint logs come from both JVMs, run with
JAVA_TOOL_OPTIONS='-Xlog:safepoint=info:file=DIR/sp-%p.log:tn' (tn: System.nanoTime, CLOCK_MONOTONIC, one clock for
both processes). The slowest 0.1 % of round trips (what p99.9 looks at) and the slowest 1 % are split by: a poller
slept (client, server), a safepoint (GC included) of either JVM overlapped the round trip, or neither (descheduling,
interrupts: what is left).
"""
import re
import sys

def main():
    slow_file, total = sys.argv[1], int(sys.argv[2])
    trips = []
    with open(slow_file) as f:
        for line in f:
            if line.startswith('#'):
                continue
            start, end, rtt, side = (int(x) for x in line.split())
            trips.append((rtt, start, end, side))
    safepoints = []
    pattern = re.compile(r'^\[(\d+)ns\] Safepoint "([^"]+)".*Total: (\d+) ns')
    for log in sys.argv[3:]:
        with open(log) as f:
            for line in f:
                m = pattern.match(line)
                if m:
                    end, name, length = int(m.group(1)), m.group(2), int(m.group(3))
                    safepoints.append((end - length, end, name))
    trips.sort(reverse=True)
    print(f'{slow_file}: {len(trips)} round trips over the threshold of {total}; {len(safepoints)} safepoints logged')
    for share in (0.001, 0.01):
        n = max(1, int(total * share))
        top = trips[:n]
        if len(top) < n:
            print(f'  slowest {share:.1%}: only {len(top)} round trips over the threshold (fewer than {n})')
        counts = {}
        for rtt, start, end, side in top:
            safepoint = any(s < end and e > start for s, e, _ in safepoints)
            sleep = {0: 'no sleep', 1: 'client slept', 2: 'server slept', 3: 'both slept'}[side]
            key = (sleep, 'safepoint' if safepoint else '-')
            counts.setdefault(key, []).append(rtt)
        floor = top[-1][0] / 1000 if top else 0
        print(f'  slowest {share:.1%} ({len(top)} round trips, >= {floor:.1f} us):')
        for key in sorted(counts, key=lambda k: -len(counts[k])):
            values = sorted(counts[key])
            print(f'    {key[0]:13s} {key[1]:10s} {len(values):6d} ({100.0 * len(values) / len(top):5.1f} %)'
                  f'  median {values[len(values) // 2] / 1000:8.1f} us')

main()

#!/usr/bin/env python3
"""Per-half-echo timeline of a 1 MiB tcp:// echo from `perf trace` output of the two pollers (see RESULTS.md).
usage: timeline.py TRACE.txt   (perf trace -p CLIENT,SERVER -e writev,readv,read,epoll_wait,futex -o TRACE.txt)"""
import re, sys, statistics as st, collections
ev = []
for line in open(sys.argv[1]):
    m = re.match(r'\s*([\d.]+) \(\s*([\d.]+) ms\): (\S+)/(\d+) (\w+)\(.*= (-?\d+)', line)
    if not m:
        m = re.match(r'\s*([\d.]+) \(\s*([\d.]+) ms\): (\S+)/(\d+)\s+\.\.\. \[continued\]: (\w+)\(\)\s+= (-?\d+)', line)
    if m:
        ev.append((float(m.group(1)), float(m.group(2)), m.group(4), m.group(5), int(m.group(6))))
ev.sort()
io = collections.Counter(e[2] for e in ev if e[3] in ('read', 'readv', 'writev'))
pollers = [t for t, _ in io.most_common(2)]
other = {pollers[0]: pollers[1], pollers[1]: pollers[0]}
res = collections.defaultdict(list)
def first_read(i, tid):
    for j in range(i + 1, len(ev)):
        if ev[j][2] == tid and ev[j][3] in ('read', 'readv') and ev[j][4] > 0:
            return j
    return None
for i, (t, d, tid, call, r) in enumerate(ev):
    if tid not in other or call != 'writev':
        continue
    peer = other[tid]
    if r == 56 or r == 72:
        j = first_read(i, peer)
        if j is not None:
            res['RTS (56 B) sent -> peer reads it' if r == 56 else 'CTS (72 B) sent -> peer reads it'].append((ev[j][0] - (t + d)) * 1e3)
    elif r > 1_000_000:
        res['1 MiB writev (sender in the kernel)'].append(d * 1e3)
        j = first_read(i, peer)
        if j is None:
            continue
        res['writev returned -> peer first read'].append((ev[j][0] - (t + d)) * 1e3)
        total, k, last = 0, j, None
        while k < len(ev) and total < 1_048_576:
            e = ev[k]
            if e[2] == peer and e[3] in ('read', 'readv') and e[4] > 0:
                total += e[4]; last = e
            k += 1
        res['peer reads the MiB (first read start -> last read end)'].append((last[0] + last[1] - ev[j][0]) * 1e3)
        for e in ev[k:]:
            if e[2] == peer and e[3] == 'writev' and e[4] == 56:
                res["peer's last read -> its own RTS (deliver, parse, handler or next call, claim)"].append((e[0] - (last[0] + last[1])) * 1e3)
                break
print('pollers', pollers, 'syscalls', dict(collections.Counter((e[3], 'EAGAIN' if e[4] < 0 else 'ok') for e in ev if e[2] in other)))
for k, v in res.items():
    print('%-80s n=%5d  p50 %7.1f us  mean %7.1f us' % (k, len(v), st.median(v), st.mean(v)))

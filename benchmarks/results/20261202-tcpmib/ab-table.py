#!/usr/bin/env python3
"""Markdown rows from ab-loopback.txt (ab.sh) and ab-netns.txt (ab-netns.sh): calls/s and p50 per target, ratios to
grpc-java direct in the same round. usage: ab-table.py ab-loopback.txt ab-netns.txt"""
import re, sys
def fmt(x): return '{:,.0f}'.format(x)
rows = []
# loopback: side-by-side table lines
cur = None
for line in open(sys.argv[1]):
    m = re.match(r'== round (\d+) (A|B) \S+ (\S+) load (\S+)', line)
    if m:
        cur = {'where': 'loopback', 'round': m.group(1), 'v': 'before' if m.group(2) == 'A' else 'after', 'load': m.group(4)}
        rows.append(cur); continue
    m = re.match(r'\s+(reverb tcp aliasing|reverb tcp|grpc-java netty direct)\s+([\d,]+)\s+[\d.]+\s+([\d.]+)', line)
    if m and cur is not None and m.group(1) not in cur:
        cur[m.group(1)] = (float(m.group(2).replace(',', '')), float(m.group(3)))
cur = None
for line in open(sys.argv[2]):
    m = re.match(r'== round (\d+) (A|B) \S+ (\S+) \S+ load (\S+)', line)
    if m:
        key = 'grpc-java netty direct' if m.group(3).startswith('grpc') else (
            'reverb tcp aliasing' if 'aliasing' in m.group(3) else 'reverb tcp')
        v = 'before' if m.group(2) == 'A' else 'after'
        if not rows or rows[-1].get('where') != 'netns' or rows[-1]['round'] != m.group(1) or rows[-1]['v'] != v:
            rows.append({'where': 'netns', 'round': m.group(1), 'v': v, 'load': m.group(4)})
        cur = (rows[-1], key); continue
    m = re.match(r'\s+Throughput:\s+([\d,.]+)', line)
    if m and cur: cur[0][cur[1]] = [float(m.group(1).replace(',', '')), None]
    m = re.match(r'\s+50 % in ([\d.]+) (µs|ms)', line)
    if m and cur and cur[1] in cur[0]:
        cur[0][cur[1]][1] = float(m.group(1)) * (1000 if m.group(2) == 'ms' else 1)
print('| where, round, jar (load) | default calls/s (p50 µs) | `aliasing` calls/s (p50 µs) | grpc-java direct calls/s (p50 µs) | default / grpc, aliasing / grpc |')
print('|---|---|---|---|---|')
for r in rows:
    d, a, g = r.get('reverb tcp'), r.get('reverb tcp aliasing'), r.get('grpc-java netty direct')
    if not (d and a and g and g[0] > 0): continue
    print('| %s %s %s (%s) | %s (%s) | %s (%s) | %s (%s) | %.1fx, %.1fx |' % (r['where'], r['round'], r['v'], r['load'],
          fmt(d[0]), fmt(d[1]), fmt(a[0]), fmt(a[1]), fmt(g[0]), fmt(g[1]), d[0] / g[0], a[0] / g[0]))

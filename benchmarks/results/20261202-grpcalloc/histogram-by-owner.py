#!/usr/bin/env python3
# Sums AsyncCallProbe --histogram output by owner (package of the class; JDK arrays and collections apart).
# Usage: histogram-by-owner.py histogram.txt
import re, sys, collections
txt = open(sys.argv[1]).read()
for sec in re.split(r'\n(?=\S+\s+[\d,]+ B/call)', txt):
    m = re.match(r'(\S+)\s+([\d,]+) B/call', sec.strip())
    if not m:
        continue
    cat = collections.Counter()
    for line in sec.splitlines():
        mm = re.match(r'\s+([\d.]+)\s+([\d,]+) B\s+(\S+)', line)
        if not mm:
            continue
        b = int(mm.group(2).replace(',', '')); c = mm.group(3)
        if c.startswith('io.reverb.grpc'): k = 'bridge (io.reverb.grpc)'
        elif c.startswith('io.reverb.rpc'): k = 'rpc-core (io.reverb.rpc)'
        elif c.startswith('io.reverb'): k = 'probe'
        elif c.startswith('com.google.protobuf'): k = 'protobuf classes'
        elif c.startswith('io.grpc.internal.RetriableStream') or 'RetryStream' in c: k = 'grpc-java retry layer classes'
        elif c.startswith('io.grpc'): k = 'grpc-java other classes'
        elif c.startswith('reactor'): k = 'reactor'
        elif c in ('[B',): k = 'byte[]'
        else: k = 'JDK arrays and collections (grpc-java\'s mostly)'
        cat[k] += b
    print('%s %s B/call (G1-free run, all threads); histogram by owner:' % (m.group(1), m.group(2)))
    for k, v in sorted(cat.items(), key=lambda x: -x[1]):
        print('   %5d %s' % (v, k))

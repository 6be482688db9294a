#!/usr/bin/env python3
"""Poller CPU of a 1 MiB echo by category, from async-profiler collapsed stacks (event=cpu, threads).
usage: ap-categories.py FILE.collapsed..."""
import sys, collections
RULES = [
    ('kernel: copy into the socket (send)', ['_copy_from_iter']),
    ('kernel: copy out of the socket (receive)', ['_copy_to_iter']),
    ('kernel: send, other', ['writev', 'write0', 'sendmsg']),
    ('kernel: receive, other', ['readv', 'read0', 'recvmsg', 'IOUtil.read']),
    ('zeroing fresh arrays in the idle task (FreshChunks.prepare)', ['FreshChunks.prepare']),
    ('parse, default (readLarge: fresh arrays, copy)', ['readLarge', 'LargeFieldSplitter']),
    ('parse, aliasing (readLent: copy into a pooled array)', ['readLent']),
    ('serialise into registered memory (writeNow)', ['writeNow', 'ProtoMarshaller.write', 'CodedOutputStream']),
    ('staging copy (first 64 KiB of a payload)', ['TcpPayloadTarget.place']),
    ('yield', ['Thread.yield', 'sched_yield']),
    ('sleep (selector, park)', ['epoll', 'select', 'park']),
    ('spin (idle strategy)', ['PollerIdleStrategy']),
    ('bench client (histogram, next call)', ['LatencyRecorder', 'Histogram', 'io/reverb/bench']),
]
for f in sys.argv[1:]:
    cat = collections.Counter(); total = 0
    for line in open(f):
        stack, n = line.rsplit(' ', 1); n = int(n)
        if 'poll' not in stack.split(';')[0]:
            continue
        total += n
        cat[next((name for name, keys in RULES if any(k in stack for k in keys)), 'other')] += n
    print(f, 'poller samples', total)
    for k, v in cat.most_common():
        print('   %-62s %6d %5.1f%%' % (k, v, 100 * v / total))

#!/usr/bin/env python3
"""Context switches of the two tcp pollers from `perf script -F comm,tid,cpu,time,event,trace` of sched:sched_switch
(recorded with perf record -e sched:sched_switch -p CLIENT,SERVER -- sleep 1): how often each was switched out while
runnable (R: preempted) or asleep (S), and which thread took its core.
usage: sched.py SWITCHES.txt"""
import re, sys, collections
state = collections.Counter(); nxt = collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', line)
    if m and m.group(1).startswith('reverb-tcp-pol'):
        state[(m.group(2), m.group(3))] += 1
        if m.group(3).startswith('R'):
            nxt[(m.group(2), m.group(4) + '/' + m.group(5))] += 1
for k, v in sorted(state.items()):
    print('poller %s switched out in state %s: %d' % (k[0], k[1], v))
for k, v in nxt.most_common(8):
    print('poller %s preempted by %s: %d' % (k[0], k[1], v))

#!/usr/bin/env python3
"""Per-thread CPU ticks and context switches of PID over SECONDS: python3 threads.py PID SECONDS"""
import os, sys, time, collections
pid, secs = int(sys.argv[1]), float(sys.argv[2])
hz = os.sysconf('SC_CLK_TCK')
def snap():
    d = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            base = f'/proc/{pid}/task/{tid}'
            comm = open(base + '/comm').read().strip()
            st = open(base + '/stat').read()
            fields = st[st.rindex(')') + 2:].split()
            cpu = int(fields[11]) + int(fields[12])
            vol = nvol = 0
            for line in open(base + '/status'):
                if line.startswith('voluntary_ctxt_switches'): vol = int(line.split()[1])
                if line.startswith('nonvoluntary_ctxt_switches'): nvol = int(line.split()[1])
            d[tid] = (comm, cpu, vol, nvol)
        except FileNotFoundError:
            pass
    return d
a = snap(); t0 = time.time(); time.sleep(secs); b = snap(); wall = time.time() - t0
rows = []
for tid, (comm, cpu, vol, nvol) in b.items():
    c0, v0, n0 = (a[tid][1], a[tid][2], a[tid][3]) if tid in a else (0, 0, 0)
    rows.append((comm, tid, cpu - c0, vol - v0, nvol - n0, tid not in a))
# group by thread name pattern
rows.sort(key=lambda r: (-(r[3] + r[4]), -r[2]))
tot_cpu = sum(r[2] for r in rows); tot_sw = sum(r[3] + r[4] for r in rows)
print(f"pid {pid} over {wall:.1f} s: {len(rows)} threads, CPU {tot_cpu * 1000 / hz:.0f} ms ({100.0 * tot_cpu / hz / wall:.2f}% of a core), "
      f"{tot_sw / wall:.1f} context switches/s")
print(f"{'thread':<28}{'tid':>8}{'cpu ms':>8}{'vol/s':>8}{'invol/s':>9}")
for comm, tid, cpu, vol, nvol, new in rows:
    if cpu or vol or nvol:
        print(f"{comm:<28}{tid:>8}{cpu * 1000 / hz:>8.0f}{vol / wall:>8.1f}{nvol / wall:>9.1f}{'  (new)' if new else ''}")
quiet = [r for r in rows if not (r[2] or r[3] or r[4])]
print(f"({len(quiet)} threads without a wake-up or CPU tick: {', '.join(sorted(set(r[0] for r in quiet)))})")

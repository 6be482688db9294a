import os,sys,time
pid=sys.argv[1]; dur=float(sys.argv[2])
def snap():
    r={}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s=open(f"/proc/{pid}/task/{t}/stat").read()
            comm=s[s.index('(')+1:s.rindex(')')]
            f=s[s.rindex(')')+2:].split()
            sch=open(f"/proc/{pid}/task/{t}/schedstat").read().split()
            r[t]=(comm,int(sch[0]), int(sch[2]))
        except Exception: pass
    return r
a=snap(); time.sleep(dur); b=snap()
rows=[]
for t,(c,ns,sw) in b.items():
    if t in a: rows.append(((ns-a[t][1])/1e6, sw-a[t][2], c))
rows.sort(reverse=True)
tot=sum(r[0] for r in rows)
print("total %.1f ms over %.0f s = %.2f%%"%(tot,dur,tot/dur/10))
for r in rows[:12]: print("%8.2f ms %6d wakeups %s"%r)

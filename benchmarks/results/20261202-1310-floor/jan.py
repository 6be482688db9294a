import json, subprocess, sys, collections
def ev(f, names):
    out = subprocess.run(['jfr','print','--json','--events',names,f],capture_output=True,text=True).stdout
    return json.loads(out)['recording']['events']
def dur(s):
    # ISO-8601 duration like PT0.000123S
    s=s[2:]; tot=0.0; num=''
    for ch in s:
        if ch.isdigit() or ch=='.': num+=ch
        else:
            v=float(num); num=''
            tot+= v*{'H':3600,'M':60,'S':1}[ch]
    return tot*1e6
f=sys.argv[1]
parks=collections.defaultdict(list)
for e in ev(f,'jdk.ThreadPark'):
    t=e['values']['eventThread']['javaName'] if e['values'].get('eventThread') else '?'
    frames=e['values']['stackTrace']['frames'] if e['values'].get('stackTrace') else []
    where=';'.join(fr['method']['type']['name'].split('.')[-1]+'.'+fr['method']['name'] for fr in frames[:6])
    parks[(t,where)].append(dur(e['values']['duration']))
print("ThreadPark >= 10us by thread and site: count, p50, p90, max (us)")
for (t,w),ds in sorted(parks.items(), key=lambda x:-len(x[1]))[:12]:
    ds.sort(); print("  %6d %8.0f %8.0f %9.0f  %s | %s"%(len(ds),ds[len(ds)//2],ds[int(len(ds)*.9)],ds[-1],t,w[:160]))
sp=[dur(e['values']['duration']) for e in ev(f,'jdk.SafepointBegin')]
vm=collections.Counter(e['values'].get('operation','?') for e in ev(f,'jdk.ExecuteVMOperation'))
gc=[dur(e['values']['duration']) for e in ev(f,'jdk.GCPhasePause')]
sp.sort(); gc.sort()
print("safepoints:",len(sp),"max %.0f us"%(sp[-1] if sp else 0), "sum %.0f us"%sum(sp), "ops", dict(vm.most_common(6)))
print("GC pauses:",len(gc),"max %.0f us"%(gc[-1] if gc else 0),"sum %.0f us"%sum(gc))

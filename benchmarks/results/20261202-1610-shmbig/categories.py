import sys,subprocess,collections,re
f=sys.argv[1]; calls=float(sys.argv[2]); hz=499.0
out=subprocess.run(['perf','script','-i',f,'-F','comm,pid,tid,ip,sym'],capture_output=True,text=True).stdout
threads=collections.defaultdict(collections.Counter)
cur=None; stack=[]
def flush():
    if cur is None: return
    comm,pid,tid=cur
    leaf=stack[0] if stack else ''
    s=' '.join(stack)
    if 'prepareIdle' in s or 'FreshChunks' in s: c='idle: prepare ahead'
    elif 'memset' in leaf and ('LargeFieldSplitter' in s or 'readLarge' in s): c='zeroing on receive'
    elif 'memset' in leaf: c='zeroing elsewhere (idle)'
    elif 'Stub' in leaf and ('writeNow' in s or 'FrameEncoder.message' in s or 'writeTo' in s): c='copy: serialise'
    elif 'Stub' in leaf and ('LargeFieldSplitter' in s or 'readLent' in s or 'readLarge' in s or 'ProtoMarshaller.read' in s): c='copy: receive'
    elif 'Stub' in leaf: c='copy: other'
    elif 'LargeFieldSplitter' in s: c='splitter other'
    elif re.search(r'\[k\]|irq|schedule|yield|futex|syscall',s) : c='kernel/sched'
    else: c='other'
    key=(pid,comm if not comm.startswith('GC') and not comm.startswith('G1') else 'GC')
    threads[key][c]+=1
for line in out.splitlines():
    if not line.strip():
        flush(); cur=None; stack=[]; continue
    if not line.startswith((' ','\t')):
        m=re.match(r'\s*(.+?)\s+(\d+)/(\d+)',line)
        if m: cur=(m.group(1),m.group(2),m.group(3))
        continue
    parts=line.strip().split(None,1)
    stack.append(parts[1] if len(parts)>1 else '')
flush()
for k,c in sorted(threads.items(), key=lambda kv:-sum(kv[1].values())):
    t=sum(c.values())
    if t<30: continue
    print(k, t, 'samples =', round(t/hz/calls*1e6,1),'us/echo')
    for cat,n in c.most_common(): print('   %-22s %6d  %6.1f us/echo'%(cat,n,n/hz/calls*1e6))

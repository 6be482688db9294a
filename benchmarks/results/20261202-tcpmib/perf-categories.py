import sys,collections
samples=[];cur=None
for line in open(sys.argv[1]):
    if line and not line[0].isspace():
        if line.strip():
            cur=[line.split()[1],[]];samples.append(cur)
    elif cur is not None and line.strip():
        p=line.strip().split(None,1)
        cur[1].append(p[1] if len(p)>1 else '')
cats=collections.Counter();tot=collections.Counter()
def cat(st):
    top=st[0] if st else ''
    s=' | '.join(st)
    if 'memset' in top or 'clear_page' in top: return 'memset(zero new arrays)'
    if '_copy_from_iter' in top: return 'kernel copy into socket'
    if '_copy_to_iter' in top: return 'kernel copy out of socket'
    if 'StubRoutines' in top or 'arraycopy' in top or 'copyMemory' in top:
        if 'TcpPayloadTarget.place' in s: return 'staging copy'
        if 'writeNow' in s or 'CodedOutput' in s or 'Marshal' in s and 'write' in s: return 'serialise copy'
        if 'LargeFieldSplitter' in s or 'onFrame' in s or 'read' in s: return 'parse copy'
        return 'other copy'
    if 'FreshChunks' in s or 'new_array' in s or 'new_type_array' in s: return 'alloc other'
    if 'epoll' in s or 'futex' in s or 'schedule' in s or 'park' in s.lower() or 'select' in s.lower(): return 'sleep/wake/select'
    if 'sendmsg' in s or 'writev' in s or 'write0' in s: return 'kernel send other'
    if 'recvmsg' in s or 'readv' in s or 'read0' in s or 'vfs_read' in s: return 'kernel recv other'
    if 'kallsyms' in top: return 'kernel other'
    return 'other user: '+top.split('(')[0][:60]
for tid,st in samples:
    tot[tid]+=1; cats[(tid,cat(st))]+=1
for tid in tot:
    print(tid,tot[tid])
    for (t,c),n in sorted(cats.items(),key=lambda x:-x[1])[:40]:
        if t==tid and n*100/tot[tid]>=1.0: print('   %-50s %5d %5.1f%%'%(c,n,100*n/tot[tid]))

import sys,collections
f=sys.argv[1]; keys=sys.argv[2:]
tot=0; c=collections.Counter(); leaf=collections.Counter()
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n)
    if 'poller' not in st.split(';')[0] and 'Poller' not in st: continue
    tot+=n
    for k in keys:
        if k in st: c[k]+=n
    leaf[st.split(';')[-1]]+=n
print(f, 'poller samples', tot)
for k in keys: print('  %-60s %6d %5.1f%%'%(k,c[k],100*c[k]/max(tot,1)))
print('  top leaves:')
for k,v in leaf.most_common(25): print('   %6d %5.1f%% %s'%(v,100*v/tot,k[:150]))

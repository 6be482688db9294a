import sys, collections
f=sys.argv[1]
c=collections.Counter(); tot=0; sub=collections.defaultdict(collections.Counter)
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n); fr=st.split(';')
    if 'RpcCostProbe$Chain.run' not in st: continue
    tot+=n
    idx=[i for i,x in enumerate(fr) if 'End.receive' in x or 'Delivery.add' in x]
    last=idx[-1] if idx else 0
    rest=fr[last+1:]
    # skip until first rpc frame
    key=' > '.join(x.split('/')[-1] for x in rest[:3])
    c[key]+=n
for k,v in c.most_common(40): print("%5.1f%% %s"%(100*v/tot,k[:200]))

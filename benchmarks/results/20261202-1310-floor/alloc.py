import sys, collections
f=sys.argv[1]; marker=sys.argv[2]
c=collections.Counter(); tot=0
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n)
    fr=st.split(';')
    if not any(marker in x for x in fr): continue
    typ=fr[-1]
    # first frame from reverb/protobuf/reactor nearest the allocation
    site=[x for x in fr[:-1] if any(p in x for p in ('io/reverb','protobuf','reactor'))]
    key=typ+'  @ '+' <- '.join(reversed(site[-3:]))
    c[key]+=n; tot+=n
print("bytes sampled", tot)
for k,v in c.most_common(20): print("%5.1f%% %s"%(100*v/tot,k[:260]))

import sys, collections
# work subset: stacks with any frame matching one of the markers; print self-time by frame and inclusive by rpc frames
f=sys.argv[1]; markers=sys.argv[2].split(',')
tot=0; selfc=collections.Counter(); incl=collections.Counter()
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n)
    fr=st.split(';')
    idx=[i for i,x in enumerate(fr) if any(m in x for m in markers)]
    if not idx: continue
    fr=fr[idx[0]:]
    tot+=n; selfc[fr[-1]]+=n
    for x in set(fr): incl[x]+=n
print("work samples",tot)
for k,v in selfc.most_common(45): print("  self %5.1f%% %s"%(100*v/tot,k[:140]))
print("--incl")
for k,v in incl.most_common(90): print("  incl %5.1f%% %s"%(100*v/tot,k[:140]))

import sys, collections
f=sys.argv[1]; filt=sys.argv[2] if len(sys.argv)>2 else None
selfc=collections.Counter(); incl=collections.Counter(); tot=0
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n)
    fr=st.split(';')
    if filt and not any(filt in x for x in fr): continue
    tot+=n
    selfc[fr[-1]]+=n
    for x in set(fr): incl[x]+=n
print("total",tot)
print("== self")
for k,v in selfc.most_common(45): print("%5.1f%% %s"%(100*v/tot,k[:150]))
print("== incl")
for k,v in incl.most_common(90):
    if any(p in k for p in ('reverb','reactor','protobuf','java/','jdk/')): print("%5.1f%% %s"%(100*v/tot,k[:150]))

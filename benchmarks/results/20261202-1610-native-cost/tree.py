import sys, collections
f=sys.argv[1]; root=sys.argv[2]; depth=int(sys.argv[3]); thr=float(sys.argv[4]) if len(sys.argv)>4 else 0.3
tot=0; tree={}
def add(node,path,n):
    node.setdefault('n',0); node['n']+=n
    if not path: node.setdefault('self',0); node['self']+=n; return
    ch=node.setdefault('c',{})
    add(ch.setdefault(path[0],{}),path[1:],n)
for line in open(f):
    st,_,n=line.rstrip().rpartition(' '); n=int(n); fr=st.split(';')
    if 'RpcCostProbe$Chain.run' not in st: continue
    tot+=n
    idx=[i for i,x in enumerate(fr) if 'End.receive' in x or 'Delivery.add' in x]
    last=idx[-1] if idx else 0
    rest=fr[last+1:]
    if not rest or root not in rest[0]: continue
    add(tree,[x.split('/')[-1] for x in rest],n)
def pr(node,name,d,ind):
    p=100*node['n']/tot
    if p<thr: return
    print("%s%5.1f%% (self %.1f) %s"%(ind,p,100*node.get('self',0)/tot,name[:120]))
    if d>=depth: return
    for k,v in sorted(node.get('c',{}).items(),key=lambda kv:-kv[1]['n']): pr(v,k,d+1,ind+'  ')
pr(tree,root,0,'')

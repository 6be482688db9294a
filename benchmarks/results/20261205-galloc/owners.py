import sys,re
def load(f):
    d={}
    for l in open(f):
        m=re.match(r'\s+([\d.]+)\s+([\d,]+) B\s+(\S+)',l)
        if m: d[m.group(3)]=int(m.group(2).replace(',',''))
    return d
def owner(c):
    if c.startswith('io.reverb.grpc'): return 'bridge (io.reverb.grpc)'
    if c.startswith('io.reverb.rpc'): return 'rpc-core (io.reverb.rpc)'
    if c.startswith('io.grpc') or c.startswith('com.google.common'): return 'grpc-java (io.grpc, guava)'
    if c.startswith('com.google.protobuf'): return 'protobuf'
    return 'JDK arrays/collections (mostly grpc-java\'s and protobuf\'s)'
for f in sys.argv[1:]:
    t={}
    for c,b in load(f).items(): t[owner(c)]=t.get(owner(c),0)+b
    print(f, ' | '.join('%s %d'%(k,v) for k,v in sorted(t.items())), '| all', sum(t.values()))

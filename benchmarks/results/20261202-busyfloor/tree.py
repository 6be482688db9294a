import sys, collections
f = sys.argv[1]; maxd = int(sys.argv[2]); thr = float(sys.argv[3])
root = {}; total = 0
def short(x): return x.split('/')[-1]
for line in open(f):
    stack, n = line.rsplit(' ', 1); n = int(n)
    frames = stack.split(';')
    idx = [i for i,x in enumerate(frames) if 'End.receive' in x]
    if not idx: continue
    frames = frames[idx[-1]+1:]
    total += n
    node = root
    for fr in frames[:maxd]:
        e = node.setdefault(short(fr), [0, 0, {}]); e[0] += n; node = e[2]
    # self
def pr(node, d):
    for k, (n, _, ch) in sorted(node.items(), key=lambda kv: -kv[1][0]):
        if 100.0*n/total < thr: continue
        print("%s%5.1f%% %s" % ('  '*d, 100.0*n/total, k)); pr(ch, d+1)
print("samples", total); pr(root, 0)

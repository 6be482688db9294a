import sys, collections
f = sys.argv[1]; pats = sys.argv[2:]
c = collections.Counter(); total=0; selfc=collections.Counter()
for line in open(f):
    stack, n = line.rsplit(' ', 1); n = int(n)
    frames = stack.split(';')
    idx = [i for i,x in enumerate(frames) if 'End.receive' in x]
    if not idx: continue
    frames = frames[idx[-1]:]
    total += n
    for p in pats:
        if any(p in fr for fr in frames): c[p]+=n
print("samples", total)
for p in pats: print("%5.1f%% %s" % (100.0*c[p]/total, p))

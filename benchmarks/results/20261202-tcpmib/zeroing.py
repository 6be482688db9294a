import sys,collections
for f in sys.argv[1:]:
    c=collections.Counter(); p=0
    for line in open(f):
        stack,n=line.rsplit(' ',1); n=int(n)
        if 'poll' not in stack.split(';')[0]: continue
        p+=n
        top=stack.split(';')[-1]
        zero = 'memset' in top or 'clear_page' in top or 'Copy::fill' in top or 'fill_to' in top
        if 'FreshChunks.prepare' in stack:
            c['prepare (idle task), all' ]+=n
            if zero: c['prepare: zeroing']+=n
        elif 'LargeFieldSplitter.chunks' in stack or 'readLarge' in stack:
            c['parse (readLarge), all']+=n
            if zero: c['parse: zeroing on receive']+=n
    print(f, 'poller samples', p, ' '.join('%s=%.1f%%'%(k,100*v/p) for k,v in sorted(c.items())))

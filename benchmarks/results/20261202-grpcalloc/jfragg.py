import sys, re, collections
# parse `jfr print --events jdk.ObjectAllocationSample --stack-depth N` text
txt = open(sys.argv[1]).read()
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ev = txt.split('jdk.ObjectAllocationSample {')[1:]
agg = collections.Counter(); total = 0
for e in ev:
    m = re.search(r'objectClass = (\S+)', e); w = re.search(r'weight = ([\d.,]+) (\w+)', e)
    if not m or not w: continue
    val = float(w.group(1).replace(',', '')); unit = w.group(2)
    val *= {'bytes':1,'byte':1,'kB':1024,'MB':1024**2,'GB':1024**3}.get(unit,1)
    frames = re.findall(r'^\s+([\w.$<>]+\.[\w$<>]+)\(', e.split('stackTrace = [')[1], re.M) if 'stackTrace = [' in e else []
    # first frame not in java./jdk./reactor./sun.
    site = [f for f in frames if not re.match(r'(java|jdk|sun)\.', f)][:3]
    agg[(m.group(1), ' < '.join(site))] += val; total += val
print('total sampled %.0f B' % total)
for (cls, site), v in agg.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 70):
    print('%7.1f%%  %-45s %s' % (100*v/total, cls[-45:], site))

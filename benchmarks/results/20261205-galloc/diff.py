import sys,re
def load(f):
    d={}
    for l in open(f):
        m=re.match(r'\s+([\d.]+)\s+([\d,]+) B\s+(\S+)',l)
        if m: d[m.group(3).split('/')[0]]=(float(m.group(1)),int(m.group(2).replace(',','')))
    return d
a=load(sys.argv[1]); b=load(sys.argv[2])
rows=[]
for k in set(a)|set(b):
    x=a.get(k,(0,0)); y=b.get(k,(0,0))
    if x[1]!=y[1]: rows.append((y[1]-x[1],k,x,y))
for r in sorted(rows): print('%+6d  %-70s %5.2f/%4d -> %5.2f/%4d'%(r[0],r[1][-70:],r[2][0],r[2][1],r[3][0],r[3][1]))

import re,sys
src,dst=sys.argv[1],sys.argv[2]
text=open(src).read()
out=[];section=None
sec_text={}
cur=None
for line in text.splitlines():
    m=re.match(r'^\[(\w+)\]',line)
    if m: cur=m.group(1)
    sec_text.setdefault(cur,[]).append(line)
def refit(lines):
    body="\n".join(lines)
    m=re.search(r'half round trips: (.*)\)',body)
    if not m: return lines
    pts=[]
    for item in m.group(1).split(', '):
        n,unit,t,_=item.split(' ')
        pts.append((int(n)*1024,float(t)))
    alpha=float(re.search(r'^alpha_us = ([\d.]+)',body,re.M).group(1))
    e=re.search(r'^eager_bytes = (\d+)',body,re.M)
    eager=int(e.group(1)) if e else 8192
    P=[(8,alpha)]+[(n,t) for n,t in pts if n<=eager]
    if len(P)<2: return lines
    mb=sum(b for b,_ in P)/len(P); mt=sum(t for _,t in P)/len(P)
    sbb=sum((b-mb)**2 for b,_ in P); sbt=sum((b-mb)*(t-mt) for b,t in P)
    if sbt<=0: return lines
    rate=sbb/sbt/1e3
    return [re.sub(r'^beta_gbps = .*',f'beta_gbps = {rate:.3f}',l) for l in lines]
res=[]
for k,lines in sec_text.items():
    res+= refit(lines) if k in ('intra','inter') else lines
open(dst,'w').write("\n".join(res)+"\n")

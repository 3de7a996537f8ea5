import numpy as np, numsoft, torch, torch.nn.functional as F, time, sys
torch.set_num_threads(2)
N,V=int(sys.argv[1]),int(sys.argv[2])
rng=np.random.default_rng(0)
s=rng.normal(size=(N,V)).astype(np.float32); t=(2*rng.normal(size=(N,V))).astype(np.float32)
q=numsoft.softmax(t)
def tkl():
    S=torch.from_numpy(s).requires_grad_(); l=F.kl_div(F.log_softmax(S,-1),F.log_softmax(torch.from_numpy(t),-1),reduction='batchmean',log_target=True); l.backward(); return S.grad
def nkl(): return numsoft.kl_div(s,t,return_grad=True)
def tjsd():
    S=torch.from_numpy(s).requires_grad_(); sl=F.log_softmax(S,-1); tl=F.log_softmax(torch.from_numpy(t),-1); b=torch.tensor(0.5)
    m=torch.logsumexp(torch.stack([sl+torch.log(1-b), tl+torch.log(b)]),dim=0)
    j=b*F.kl_div(m,tl,reduction='none',log_target=True)+(1-b)*F.kl_div(m,sl,reduction='none',log_target=True)
    (j.sum()/N).backward(); return S.grad
def njsd(): return numsoft.jsd(s,t,return_grad=True)
def tce():
    S=torch.from_numpy(s).requires_grad_(); F.cross_entropy(S, torch.from_numpy(q)).backward(); return S.grad
def nce(): return numsoft.cross_entropy(s,q,return_grad=True)
for name,(a,b) in dict(kl=(nkl,tkl),jsd=(njsd,tjsd),ce=(nce,tce)).items():
    a();b()
    ta=[];tb=[]
    for r in range(3):
        t0=time.perf_counter();a();ta.append(time.perf_counter()-t0)
        t0=time.perf_counter();b();tb.append(time.perf_counter()-t0)
    print(name, f"numsoft {min(ta):.3f}s torch {min(tb):.3f}s  ratio {min(tb)/min(ta):.2f}x")

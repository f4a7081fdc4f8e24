import time
from verimath.datasets_prep import prepare, decontaminate
from verimath.envs.problem import Problem
D='/work/shared/data/'
train=prepare('gsm8k',D+'gsm8k/train.jsonl',verify=False).problems
syn=[Problem(f"syn/{k}/{i}", f"Variant {k}. {p.prompt}", p.answer, "syn") for k in range(3) for i,p in enumerate(train)][:17000]
ev=[p for s,f in [('math','math500/test.jsonl'),('aime','aime24/test.jsonl'),('aime','aime25/test.jsonl')] for p in prepare(s,D+f,verify=False).problems]+prepare('gsm8k',D+'gsm8k/test.jsonl',verify=False).problems[:40]
# planted: 1 in 100 training problems is an eval problem with a prefix
planted=[Problem(f"p/{i}", "Consider. "+ev[i%600].prompt, "1","x") for i in range(170)]
for name,tr in [("17k gsm8k-synthetic",syn),("17k + 170 planted",syn+planted)]:
    ts=[]
    for _ in range(3):
        t=time.perf_counter(); kept,drop=decontaminate(tr,ev); ts.append(time.perf_counter()-t)
    print(name, len(tr),'x',len(ev), 'min %.3fs'%min(ts), 'dropped',len(drop))
t=time.perf_counter(); r=prepare('gsm8k',D+'gsm8k/train.jsonl'); print('prepare gsm8k train 7473 (verify on) %.2fs'%(time.perf_counter()-t), r.counts)
t=time.perf_counter(); r=prepare('math',D+'math500/test.jsonl'); print('prepare math500 (verify on) %.2fs'%(time.perf_counter()-t))

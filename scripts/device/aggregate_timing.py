"""Device smoke check + op-level timing of sample_aggregate and a
FusedGraphSAGE training step (forward + backward + fused AdamW).

    python scripts/device/aggregate_timing.py [graph]

1. CUDA == CPU on a small random graph: draws bitwise, outputs and
   gradients close, for every reduce, k in {-1, 3, 100} and four dtypes.
2. Op timing (median of 50, synchronised) of the forward and backward on the
   generated graph at batch 1024.
3. The FusedGraphSAGE step at [15,10] and [25,10], fp32 and bf16 autocast,
   with a breakdown (sample+forward / backward / optimizer).
"""
import sys

import torch

from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.nn import CapturedStep, FusedGraphSAGE
from pyg_fusesample.ops import sample_aggregate
from pyg_fusesample.sampler import build_csc


def median_ms(fn, reps=50, warmup=5):
    return timing.median_ms(fn, reps, warmup, torch.device('cuda'))


def agreement():
    g = torch.Generator().manual_seed(0)
    n = 3000
    ei = torch.randint(0, n, (2, 60000), generator=g)
    ei = torch.cat([ei, torch.stack([torch.randint(0, n, (4000,), generator=g),
                                     torch.zeros(4000, dtype=torch.long)])], 1)
    csc = build_csc(ei, n)
    tgt = torch.cat([torch.randint(-1, n, (700,), generator=g), torch.tensor([0, 0])])
    worst = 0.0
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(n, 70, generator=g).to(dtype)
        for reduce in ('sum', 'mean', 'max'):
            for k in (-1, 3, 100):
                for replace in (False, True):
                    outs = []
                    for dev in ('cpu', 'cuda'):
                        xd = x.detach().to(dev).requires_grad_()
                        o = sample_aggregate(csc.colptr.to(dev), csc.row.to(dev), xd,
                                             tgt.to(dev), k, reduce, replace, 7, 1)
                        gout = torch.ones_like(o.out).cumsum(1) / 70
                        o.out.backward(gout)
                        outs.append((o.out.float().cpu(), o.nbr.cpu(),
                                     xd.grad.float().cpu()))
                    (oc, nc, gc), (og, ng, gg) = outs
                    assert torch.equal(nc, ng), (dtype, reduce, k, replace)
                    tol = 1e-5 if dtype in (torch.float32, torch.float64) else 2e-2
                    d_out = (oc - og).abs().max().item()
                    d_grad = ((gc - gg).abs().max() / gc.abs().max().clamp_min(1)).item()
                    worst = max(worst, d_out / max(tol, 1e-12))
                    assert d_out <= tol * max(1, oc.abs().max().item()), \
                        (dtype, reduce, k, replace, d_out)
                    assert d_grad <= tol, (dtype, reduce, k, replace, d_grad)
    print('CUDA == CPU: draws bitwise, outputs and gradients within tolerance '
          '(4 dtypes x 3 reduces x k in -1,3,100 x replace)', flush=True)


def timing(graph):
    data = get_dataset(graph)
    print(f'SYNTHETIC graph {graph}: {data.num_nodes:,} nodes, {data.num_edges:,} '
          f'edges, {data.x.size(1)} features', flush=True)
    dev = torch.device('cuda')
    x = data.x.to(dev)
    ei = data.edge_index.to(dev)
    csc = build_csc(ei, data.num_nodes)
    train = data.train_mask.nonzero().view(-1).to(dev)
    y = data.y.to(dev)
    seeds = train[torch.randperm(train.numel(), device=dev)[:1024]]
    for k in (15, 25):
        xg = x.clone().requires_grad_()
        fw = lambda: sample_aggregate(csc.colptr, csc.row, x, seeds, k, 'mean', False, 1, 0)
        o = sample_aggregate(csc.colptr, csc.row, xg, seeds, k, 'mean', False, 1, 0)
        bw = lambda: torch.ops.fusesample.sample_aggregate_backward(
            o.out, csc.colptr, csc.row, seeds, o.nbr, o.arg, k, 'mean', x.size(0))
        print(f'op k={k} batch 1024 F={x.size(1)}: forward {median_ms(fw):.3f} ms, '
              f'backward (dense [N,F] grad) {median_ms(bw):.3f} ms', flush=True)
        lvl1 = o.nbr.reshape(-1)
        fw2 = lambda: sample_aggregate(csc.colptr, csc.row, x, lvl1, 10, 'mean', False, 1, 1)
        print(f'op level-2 k=10 over {lvl1.numel():,} targets: forward '
              f'{median_ms(fw2):.3f} ms', flush=True)
    for fan in ([15, 10], [25, 10]):
        for amp in (False, True):
            for captured in (False, True):
                torch.manual_seed(0)
                model = FusedGraphSAGE(x.size(1), 256, int(y.max()) + 1, len(fan),
                                       fan).to(dev)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True,
                                        capturable=captured)
                perm = train[torch.randperm(train.numel(), device=dev)]
                batches = perm[:(perm.numel() // 1024) * 1024].view(-1, 1024)

                def body(s):
                    with torch.autocast('cuda', dtype=torch.bfloat16, enabled=amp,
                                        cache_enabled=False):
                        out = model(x, ei, s)
                        loss = torch.nn.functional.cross_entropy(out.float(), y[s])
                    loss.backward()
                    opt.step()
                    return loss

                if captured:
                    run = CapturedStep(body, opt, 1024, dev, example_seeds=batches[0])
                else:
                    def run(s):
                        opt.zero_grad(set_to_none=True)
                        return body(s)
                state = {'i': 0}

                def step():
                    run(batches[state['i'] % batches.size(0)])
                    state['i'] += 1
                ms = median_ms(step, reps=60, warmup=10)
                losses = [float(run(batches[i])) for i in range(40)]
                print(f'FusedGraphSAGE step {fan} amp={amp} captured={captured}: '
                      f'{ms:.3f} ms; loss over 40 steps {losses[0]:.3f} -> '
                      f'{sum(losses[-5:]) / 5:.3f}', flush=True)
                if not amp and not captured and fan == [15, 10]:
                    with torch.profiler.profile(activities=[
                            torch.profiler.ProfilerActivity.CUDA]) as prof:
                        for _ in range(10):
                            step()
                        torch.cuda.synchronize()
                    print(prof.key_averages().table(sort_by='cuda_time_total',
                                                    row_limit=12), flush=True)


if __name__ == '__main__':
    agreement()
    timing(sys.argv[1] if len(sys.argv) > 1 else 'products')

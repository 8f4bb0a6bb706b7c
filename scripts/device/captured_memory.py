"""What the captured FusedGraphSAGE step's memory consists of (products-like,
batch 1024, [15, 10]): allocated bytes before and after CapturedStep's
warm-up and capture, and what a first GEMM on a fresh stream allocates
(PyTorch keeps one cuBLAS workspace per stream in the caching allocator)."""
import torch

from pyg_fusesample.bench.runner import Bench
from pyg_fusesample.bench.sage_runner import FusedSage
from pyg_fusesample.datasets import get_dataset

MB = 2 ** 20


def alloc():
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated() / MB


a = torch.randn(256, 256, device='cuda')
base = alloc()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    a @ a
print(f'first GEMM on a new stream: +{alloc() - base:.1f} MB allocated')

data = get_dataset('products')
bench = Bench(data, torch.device('cuda'))
run = FusedSage(bench, [15, 10], captured=True)
seeds = run.train_idx[torch.randperm(run.train_idx.numel(), device='cuda')[:1024]]
import contextlib
for _ in range(2):
    run.eager_step(seeds, contextlib.nullcontext())
before = alloc()
torch.cuda.reset_peak_memory_stats()
run.step(seeds, contextlib.nullcontext())  # warm-up (side stream) + capture + replay
after = alloc()
peak = torch.cuda.max_memory_allocated() / MB
for _ in range(5):
    run.step(seeds, contextlib.nullcontext())
print(f'captured step: allocated before {before:.1f} MB, after capture '
      f'{after:.1f} MB (+{after - before:.1f}), peak +{peak - before:.1f} MB, '
      f'after 5 replays {alloc():.1f} MB')
print(torch.cuda.memory_summary(abbreviated=True))

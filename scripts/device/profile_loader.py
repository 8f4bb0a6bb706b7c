"""Where a FusedNeighborLoader batch spends its time beyond the sampling op:
torch.profiler over 30 batches on the products-like graph, [15, 10, 5],
batch 1024. Prints the top operators by self CPU and by device time."""
import copy
import time

import torch
from torch.profiler import ProfilerActivity, profile

from pyg_fusesample import FusedNeighborLoader
from pyg_fusesample.datasets import products_like

data = copy.copy(products_like()).to('cuda')
loader = FusedNeighborLoader(data, num_neighbors=[15, 10, 5], batch_size=1024,
                             input_nodes=data.train_mask, shuffle=True, seed=0)
it = iter(loader)
for _ in range(10):
    next(it)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(30):
    next(it)
torch.cuda.synchronize()
print(f'plain: {(time.perf_counter() - t) / 30 * 1e3:.3f} ms/batch')
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(30):
        next(it)
        torch.cuda.synchronize()
print(prof.key_averages().table(sort_by='self_cpu_time_total', row_limit=22,
                                max_name_column_width=60))
print(prof.key_averages().table(sort_by='self_cuda_time_total', row_limit=12,
                                max_name_column_width=60))

"""The ``torch-gpu`` baseline: neighbour sampling on the GPU as a PyG user
would write it in plain PyTorch -- per hop, random picks with replacement,
``torch.unique`` to deduplicate, then gather features and labels. It is the
anchor for GPU sampling speed in the benchmarks, not part of the library.
"""
from typing import List

import torch
from torch import Tensor
from torch_geometric.data import Data


class TorchGPUSampler:
    def __init__(self, colptr: Tensor, row: Tensor, x: Tensor, y: Tensor,
                 input_nodes: Tensor, num_neighbors: List[int],
                 batch_size: int, seed: int = 0):
        self.colptr, self.row = colptr, row.long()
        self.x, self.y = x, y
        self.input_nodes = input_nodes.to(colptr.device)
        self.num_neighbors = num_neighbors
        self.batch_size = batch_size
        self.gen = torch.Generator(device=colptr.device).manual_seed(seed)

    def sample(self, seed: Tensor) -> Data:
        nodes, rows, cols = seed, [], []
        frontier = torch.arange(seed.numel(), device=seed.device)
        for k in self.num_neighbors:
            targets = nodes[frontier]
            start = self.colptr[targets]
            deg = self.colptr[targets + 1] - start
            rand = torch.rand(targets.numel(), k, device=seed.device,
                              generator=self.gen)
            pick = start[:, None] + (rand * deg[:, None]).long()
            keep = (deg > 0)[:, None].expand(-1, k)
            nbr = self.row[pick[keep]]
            col = frontier[:, None].expand(-1, k)[keep]
            # Dedup against every node so far: known nodes keep their local
            # id, new ones are appended (one host sync, for their count).
            known = nodes.numel()
            uniq, inverse = torch.unique(torch.cat([nodes, nbr]),
                                         return_inverse=True)
            local = torch.full((uniq.numel(), ), -1, dtype=torch.long,
                               device=seed.device)
            local[inverse[:known]] = torch.arange(known, device=seed.device)
            new = local < 0
            local[new] = known + torch.arange(int(new.sum()),
                                              device=seed.device)
            frontier = local[new]
            nodes = torch.cat([nodes, uniq[new]])
            rows.append(local[inverse[known:]])
            cols.append(col)
        edge_index = torch.stack([torch.cat(rows), torch.cat(cols)])
        return Data(x=self.x[nodes], y=self.y[nodes], edge_index=edge_index,
                    n_id=nodes, batch_size=seed.numel())

    def __iter__(self):
        perm = self.input_nodes[torch.randperm(
            self.input_nodes.numel(), device=self.input_nodes.device,
            generator=self.gen)]
        for i in range(0, perm.numel(), self.batch_size):
            yield self.sample(perm[i:i + self.batch_size])

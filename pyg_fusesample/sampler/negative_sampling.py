"""PyG's negative sampling, drawn on the sampler's device from a keyed
generator.

PyG's :class:`~torch_geometric.sampler.NegativeSampling` draws with
``torch.randint`` on the CPU from the global RNG. For a graph on a GPU that
would put a host-side draw and a copy on every link batch, and the draws
would not follow the loader's ``seed``. :class:`KeyedNegativeSampling`
draws the same distribution (uniform, or ``src_weight``/``dst_weight``
proportional, with replacement) on the device, from a generator seeded by
the batch's RNG key, so link batches are repeatable like node batches.
"""
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.sampler import NegativeSampling


class KeyedNegativeSampling(NegativeSampling):
    r""":class:`~torch_geometric.sampler.NegativeSampling` whose draws come
    from :obj:`generator` on :obj:`device`."""
    def __init__(self, neg_sampling: NegativeSampling, device: torch.device,
                 key: int):
        super().__init__(neg_sampling.mode, neg_sampling.amount,
                         neg_sampling.src_weight, neg_sampling.dst_weight)
        self.device = torch.device(device)
        self.generator = torch.Generator(self.device).manual_seed(key)

    def sample(self, num_samples: int, endpoint: str,
               num_nodes: Optional[int] = None) -> Tensor:
        weight = self.src_weight if endpoint == 'src' else self.dst_weight
        if weight is None:
            if num_nodes is None:
                raise ValueError(f"Cannot sample negatives in "
                                 f"'{self.__class__.__name__}' without "
                                 f"passing the 'num_nodes' argument")
            return torch.randint(num_nodes, (num_samples, ),
                                 device=self.device, generator=self.generator)
        if num_nodes is not None and weight.numel() != num_nodes:
            raise ValueError(f"The '{endpoint}_weight' of the negative "
                             f"sampling holds {weight.numel()} entries, but "
                             f"there are {num_nodes} {endpoint} nodes")
        return torch.multinomial(weight.to(self.device), num_samples,
                                 replacement=True, generator=self.generator)

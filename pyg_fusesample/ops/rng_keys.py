"""Keys for the ops' counter-based RNG (``kernels/common/rng.h``).

A sampling op draws every random number from a pure function of its
``rng_seed`` and the draw's coordinates, so a call is repeatable and the CPU
and CUDA kernels agree bitwise. The keys themselves come from PyTorch's RNG,
so ``torch.manual_seed`` (or a ``torch.Generator``) makes a run repeatable.
"""
from typing import List, Optional

import torch

_RNG_HIGH = 2**62


def draw_rng_seeds(count: int,
                   generator: Optional[torch.Generator] = None) -> List[int]:
    r"""Fresh 62-bit keys for the op's counter-based RNG, from
    :obj:`generator` (or PyTorch's global RNG, so ``torch.manual_seed``
    makes runs repeatable)."""
    device = generator.device if generator is not None else None
    return torch.randint(_RNG_HIGH, (count, ), generator=generator,
                         device=device).tolist()

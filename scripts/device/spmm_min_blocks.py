"""EXPERIMENT (call81): the SpMM kernels with their registers capped by
__launch_bounds__'s minimum blocks per SM (FUSESAMPLE_SPMM_MIN_BLOCKS, read
per call, a switch that lived only in that build), on the cells short of a
target and their neighbours; median of 20 synchronised calls, each checked
against cuSPARSE. The kernels now take the tunings it chose (Tuning in spmm_kernel.cu).

    python scripts/device/spmm_min_blocks.py
    SPMM_BLOCKS=0,4,5 SPMM_DTYPES=float32 ...  # these caps (0: the build's
                                               # own) and dtypes only
    SPMM_KNOB=FUSESAMPLE_SPMM_ONE_VEC SPMM_SET=one_vector ...  # call85's
        # switch (one-vector layouts on a kernel of one vector a lane) and
        # the cells it applies to
"""
import os

import torch

from pyg_fusesample.bench import timing
from pyg_fusesample.datasets import get_dataset
from pyg_fusesample.ops.spmm import spmm, spmm_cusparse
from pyg_fusesample.sparse import CSRGraph

CONFIGS = {
    'products': [(torch.float32, 16, 'hub', 538, 0), (torch.float32, 32, 'hub', 538, 0),
                 (torch.float32, 64, 'hub', 538, 0), (torch.bfloat16, 128, 'hub', 538, 0),
                 (torch.bfloat16, 32, 'hub-subwarp', 204, 0)],
    'hub': [(torch.float32, 16, 'hub-subwarp', 80, 0), (torch.float32, 32, 'hub-subwarp', 80, 0),
            (torch.float32, 128, 'hub', 155, 0), (torch.bfloat16, 128, 'hub', 155, 16),
            (torch.bfloat16, 256, 'hub', 155, 0)],
    'er': [(torch.float32, 32, 'subwarp', -1, 0), (torch.float32, 64, 'subwarp', -1, 0),
           (torch.float32, 128, 'warp', -1, 0),
           (torch.bfloat16, 128, 'warp', -1, 16), (torch.bfloat16, 256, 'warp', -1, 0)],
}
if os.environ.get('SPMM_SET') == 'one_vector':
    CONFIGS = {
        'er': [(torch.bfloat16, 128, 'warp', -1, 16), (torch.bfloat16, 256, 'warp', -1, 32),
               (torch.float32, 64, 'warp', -1, 16), (torch.float32, 128, 'warp', -1, 32)],
        'hub': [(torch.bfloat16, 128, 'hub', 155, 16), (torch.bfloat16, 256, 'hub', 155, 32),
                (torch.float32, 64, 'hub', 155, 16)],
        'products': [(torch.bfloat16, 128, 'hub', 538, 16), (torch.bfloat16, 64, 'hub', 538, 8)],
    }
KNOB = os.environ.get('SPMM_KNOB', 'FUSESAMPLE_SPMM_MIN_BLOCKS')
BLOCKS = [int(b) for b in os.environ.get('SPMM_BLOCKS', '1,3,4,5,6,8').split(',')]
DTYPES = os.environ.get('SPMM_DTYPES', 'float32,bfloat16').split(',')
print('extension:', __import__('pyg_fusesample')._extension._C.__file__, flush=True)

for name, configs in CONFIGS.items():
    data = get_dataset(name)
    g = CSRGraph.from_edge_index(data.edge_index.cuda(), data.num_nodes)
    del data
    for dtype, f, variant, th, lanes in configs:
        if str(dtype)[6:] not in DTYPES:
            continue
        x = torch.randn(g.num_cols, f, device='cuda', dtype=dtype)
        ref = spmm_cusparse(g, x.float())
        cells = []
        for mb in BLOCKS:
            os.environ[KNOB] = str(mb)
            run = lambda: spmm(g, x, variant=variant, hub_threshold=th, lanes=lanes)  # noqa: E731
            err = ((run().float() - ref).abs().max() / ref.abs().max().clamp_min(1)).item()
            assert err < (1e-4 if dtype == torch.float32 else 2e-2), (mb, err)
            cells.append(f'{mb}: {timing.median_ms(run, 20, 3, torch.device("cuda")):.3f}')
        floor = g.nnz * f * x.element_size() / 4.2e12 * 1e3
        print(f'{name} {str(dtype)[6:]} F={f} {variant} {th} lanes {lanes} | {KNOB} -> ms  '
              + '  '.join(cells) + f' | floor(4.2TB/s) {floor:.3f}', flush=True)
        del x, ref

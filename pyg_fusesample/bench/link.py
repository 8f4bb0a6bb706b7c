"""Link prediction on the harness (``python -m pyg_fusesample.bench step
--task link``; ``loader`` and ``epoch`` take ``--task link`` too).

The same timing loops, rounds and CSV as node classification
(:mod:`.runner`); what differs is the batch and the loss:

* seed edges: a random 10% of the graph's edges (:data:`SEED_FRACTION`;
  drawn once with ``torch.Generator().manual_seed(--seed)``, so every
  variant and round gets the same set), for a ``HeteroData`` of its one
  relation that is not a ``rev_`` one (``('user', 'rates', 'item')`` on
  ``user_item``). The seed edges stay in the graph (message passing sees
  them), as in PyG's link examples without a disjoint split.
* negatives: binary, one per positive (``NegativeSampling('binary', 1)``):
  a batch of ``batch_size`` seed edges carries ``2 * batch_size`` labelled
  pairs (``edge_label_index``, ``edge_label``).
* model: a GraphSAGE encoder (``len(fanout)`` layers, hidden 256, the last
  one 256 wide too; a :func:`to_hetero` one of lazy ``SAGEConv((-1, -1))``
  layers on a ``HeteroData``) and a dot-product decoder on
  ``edge_label_index``; BCE-with-logits on ``edge_label``; AdamW.

Variants: ``pyg`` (``torch_geometric.loader.LinkNeighborLoader`` on the
CPU copy, batch moved with ``.to(device)``, ``--num-workers``), ``fused``
(:class:`~pyg_fusesample.FusedLinkNeighborLoader` on the device copy, its
defaults: one launch per batch, negatives drawn on the device; it has no
prefetch; it leaves ``edge_label`` on the CPU, which the loss moves, a copy
charged to the step), ``per-hop`` (the same with ``fused=False``),
``model-only`` (8 pre-sampled fused batches on the device, cycled: the
floor). Rows name the task in ``graph``: ``<graph name>/link``. Sampled edges/s counts the
message-passing edges of a batch (``edge_index`` of every edge type), not
its labelled pairs.
"""
from typing import Dict

import torch
import torch.nn.functional as F
from torch_geometric.loader import LinkNeighborLoader
from torch_geometric.sampler import NegativeSampling

from ..loader import FusedLinkNeighborLoader
from .runner import Bench, forward

SEED_FRACTION = 0.1
LINK_VARIANTS = ('pyg', 'fused', 'per-hop', 'model-only', 'model-fresh')


def _seed_edge_type(data) -> tuple:
    # A heterogeneous graph's relation to predict: its one relation that is
    # not a reverse one (ToUndirected's 'rev_*').
    types = [t for t in data.edge_types if not t[1].startswith('rev_')]
    if len(types) != 1:
        raise ValueError(f"link prediction on a HeteroData needs exactly "
                         f"one relation that is not 'rev_*', got {types}")
    return types[0]


class LinkBench(Bench):
    """:class:`.runner.Bench` for link prediction (see the module
    docstring)."""
    VARIANTS = LINK_VARIANTS
    SETTLE_VARIANT = 'fused'  # (FusedLinkNeighborLoader never prefetches)
    PYG_LOADER = LinkNeighborLoader
    FUSED_LOADER = FusedLinkNeighborLoader

    def _init_task(self):
        data = self.data_cpu
        self.edge_type = _seed_edge_type(data) if self.hetero else None
        edge_index = (data[self.edge_type] if self.hetero
                      else data).edge_index
        num = edge_index.size(1)
        g = torch.Generator().manual_seed(int(self.seed))
        pick = torch.randperm(num, generator=g)[:max(1, round(
            SEED_FRACTION * num))]
        # On the CPU for both loaders: PyG's EdgeSamplerInput keeps seed
        # edges there; the fused loader moves each batch's to the device.
        self.label_index = edge_index[:, pick]

    def _seeds(self, data) -> Dict:
        index = self.label_index
        return {'edge_label_index': ((self.edge_type, index) if self.hetero
                                     else index),
                'neg_sampling': NegativeSampling('binary', 1)}

    def num_seeds(self) -> int:
        return self.label_index.size(1)

    _HEAD = False  # (a hetero encoder is GraphSAGE as a homogeneous one)

    def _out_channels(self, hidden: int) -> int:
        return hidden

    def loss(self, model, batch) -> torch.Tensor:
        """BCE-with-logits of the dot products of ``edge_label_index``'s
        end points' embeddings against ``edge_label``."""
        z = forward(model, batch)
        if self.hetero:
            store = batch[self.edge_type]
            z_src, z_dst = z[self.edge_type[0]], z[self.edge_type[-1]]
        else:
            store, z_src, z_dst = batch, z, z
        src, dst = store.edge_label_index
        logits = (z_src[src] * z_dst[dst]).sum(-1)
        # FusedLinkNeighborLoader leaves edge_label on the CPU (PyG's
        # edge_sample makes it with torch.ones(num_pos)): the fused variants
        # pay its copy here, as a training script would.
        label = store.edge_label.to(logits.device, non_blocking=True)
        return F.binary_cross_entropy_with_logits(logits.float(),
                                                  label.float())

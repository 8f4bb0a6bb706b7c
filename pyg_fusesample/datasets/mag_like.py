"""SYNTHETIC heterogeneous stand-in for **ogbn-mag** (``mag_like``).

What is generated: a :class:`~torch_geometric.data.HeteroData` with the
node and edge types of PyG's ``OGB_MAG`` -- papers, authors, institutions
and fields of study; ``('author', 'writes', 'paper')``, ``('paper', 'cites',
'paper')``, ``('paper', 'has_topic', 'field_of_study')`` and ``('author',
'affiliated_with', 'institution')`` -- drawn from a random model.  It
contains no real data (``data.synthetic = True``).

Statistics matched at ``scale=1`` (ogbn-mag's): 736,389 papers, 1,134,649
authors, 8,740 institutions, 59,965 fields of study; 7,145,660 writes,
5,416,271 cites, 7,505,078 has_topic and 1,043,998 affiliated_with edges
(each within ~0.1%, no duplicates, no self-citations); 128 paper features;
349 venue classes; years 2010-2019 with OGB's time split (train: year
< 2018, 629,571 papers; val: 2018, 64,879; test: 2019, 41,939).

The model.  Every node has a latent "home venue" (papers: their label ``y``,
Zipf-skewed as :mod:`.labels` draws them; other types the same way).
``cites`` is :func:`~.power_law.power_law_graph` over the papers (directed,
power-law in- and out-degrees, edge homophily ``0.45``); the features are
its noisy class centroids (:mod:`.features`), weak on their own.  The other
three relations are bipartite Chung-Lu draws: one side (the hub side:
authors for ``writes``, fields for ``has_topic``, institutions for
``affiliated_with``) is drawn by power-law weight (:mod:`.degrees`), the
other end by weight within the hub's home venue with a probability (cut for
hubs whose home venue is too small to supply them, so the largest fields and
institutions span all venues, as MAG's top-level fields do) and among all
nodes otherwise.  The expected maximum degrees are chosen, not measured on
ogbn-mag: an author writes up to ~1,500 papers, the largest field covers
~200,000 papers, the largest institution ~25,000 authors.  So an author's
papers, a field's papers and a paper's citations mostly share a venue, and a
paper's label is learnable from its neighbourhood much better than from its
own features (a 2-layer hetero GraphSAGE clearly beats an MLP).

Finally ``torch_geometric.transforms.ToUndirected()`` is applied, as PyG's
ogbn-mag examples do: ``cites`` becomes undirected (merged, coalesced) and
``rev_writes``, ``rev_has_topic`` and ``rev_affiliated_with`` are added.
"""

from __future__ import annotations

from typing import Tuple

import torch
import torch_geometric.transforms as T
from torch import Tensor
from torch_geometric.data import HeteroData

from .class_table import _ClassTable
from .degrees import _powerlaw_weights
from .edge_keys import _decode, _encode, _sorted_split
from .labels import _labels
from .power_law import power_law_graph
from .repair import _TOPUP_ROUNDS, _repair
from .scaling import _preset_name, _scaled, _scaled_max_degree


# ogbn-mag's node and edge counts.
MAG_NUM_NODES = {"paper": 736_389, "author": 1_134_649, "institution": 8_740,
                 "field_of_study": 59_965}
MAG_NUM_EDGES = {
    ("author", "writes", "paper"): 7_145_660,
    ("paper", "cites", "paper"): 5_416_271,
    ("paper", "has_topic", "field_of_study"): 7_505_078,
    ("author", "affiliated_with", "institution"): 1_043_998,
}
# OGB's time split: train year < 2018, val 2018, test 2019.
MAG_SPLIT = (629_571, 64_879, 41_939)
_NUM_FEATURES = 128
_NUM_CLASSES = 349
_CLASS_SKEW = 0.8            # Zipf exponent of the venue sizes
_FIRST_YEAR, _VAL_YEAR, _TEST_YEAR = 2010, 2018, 2019

# Bipartite relations: (edge type, hub side, hub's expected max degree and
# tail exponent, other side's expected max degree and tail exponent,
# probability that the other end shares the hub's home venue).
_BIPARTITE = (
    (("author", "writes", "paper"), "src", 1_500, 2.2, 500, 3.0, 0.7),
    (("paper", "has_topic", "field_of_study"), "dst", 200_000, 2.1, 60, 4.0,
     0.5),
    (("author", "affiliated_with", "institution"), "dst", 25_000, 2.1, 30,
     3.0, 0.5),
)
# A hub draws at most this multiple of its home venue's size in same-venue
# partners (more would mostly be duplicates).
_SAME_VENUE_BUDGET = 0.5


def _class_table(w: Tensor, y: Tensor, num_classes: int
                 ) -> Tuple[_ClassTable, Tensor]:
    """Weighted sampler of nodes (overall or by class) and the class sizes."""
    order = torch.argsort(y, stable=True)
    counts = torch.bincount(y, minlength=num_classes)
    seg_end = counts.cumsum(0)
    table = _ClassTable(w, order, y[order], seg_end - counts, seg_end,
                        num_classes)
    return table, counts


class _BipartiteSampler:
    """Draws the edges of one bipartite relation (Chung-Lu + home venues).

    The hub end of an edge is drawn by weight; the other end by weight from
    the hub's home venue with probability ``p_node[hub]`` and from all nodes
    otherwise.  Has the interface :func:`~.repair._repair` expects: ``n``
    (keys are ``src * n + dst``, ``n`` = number of targets) and ``pairs``
    (fresh other ends for kept hub ends).  ``_repair`` also retries pairs
    whose two ids happen to be equal (a self-loop test that means nothing
    across two node types); they just get another draw.
    """

    def __init__(self, hub_w: Tensor, hub_y: Tensor, other_w: Tensor,
                 other_y: Tensor, hub_is_src: bool, p_same: float,
                 count: int, gen: torch.Generator):
        self.gen = gen
        self.hub_is_src = hub_is_src
        self.n = other_w.numel() if hub_is_src else hub_w.numel()
        self.hub_y = hub_y
        self.hubs, _ = _class_table(hub_w, hub_y, _NUM_CLASSES)
        self.others, supply = _class_table(other_w, other_y, _NUM_CLASSES)
        draws = hub_w * (count / float(hub_w.sum()))
        cap = _SAME_VENUE_BUDGET * supply[hub_y] / draws.clamp_(min=1e-12)
        self.p_node = cap.clamp_(max=p_same).to(torch.float32)

    def pairs(self, hub: Tensor,
              force_same: bool = False) -> Tuple[Tensor, Tensor]:
        same = torch.rand(hub.numel(), generator=self.gen) < self.p_node[hub]
        if force_same:
            same.fill_(True)
        venue = torch.where(same, self.hub_y[hub], _NUM_CLASSES)
        other = self.others.draw(venue, self.gen)
        # A copy: the caller's keys encoding scales ``src`` in place.
        return (hub.clone(), other) if self.hub_is_src else (other, hub)

    def edges(self, count: int) -> Tensor:
        """``edge_index`` of ``count`` distinct edges (up to a few hub
        duplicates that keep colliding, which are dropped)."""
        src, dst = self.pairs(self.hubs.draw_any(count, self.gen))
        unique, pending = _sorted_split(_encode(src, dst, self.n, False))
        parts = [unique]
        del src, dst, unique
        src, dst = _decode(pending, self.n)
        kept = src if self.hub_is_src else dst
        for _ in range(_TOPUP_ROUNDS):
            if kept.numel() == 0:
                break
            new, failed = _repair(self, parts, kept, False)
            parts.append(new)
            kept = kept[failed]
        src, dst = _decode(torch.cat(parts), self.n)
        return torch.stack([src, dst])


def _degree_weights(num_nodes: int, num_edges: int, max_degree: float,
                    exponent: float, gen: torch.Generator) -> Tensor:
    """Power-law weights whose top one expects ``max_degree`` of
    ``num_edges`` edges, on random node ids."""
    ratio = max_degree / max(num_edges / num_nodes, 1e-12)
    w = _powerlaw_weights(num_nodes, ratio, exponent)
    return w[torch.randperm(num_nodes, generator=gen)]


def _years(num_papers: int, gen: torch.Generator) -> Tensor:
    """Publication years with OGB's split sizes (scaled): 2010-2017 (train,
    assumed linear growth from 2010 to 2017), 2018 (val), 2019 (test)."""
    total = sum(MAG_SPLIT)
    n_train = int(round(num_papers * MAG_SPLIT[0] / total))
    n_val = min(int(round(num_papers * MAG_SPLIT[1] / total)),
                num_papers - n_train)
    growth = torch.arange(8, 16, dtype=torch.float64)
    cum = (growth.cumsum(0) / growth.sum() * n_train).round().long()
    counts = torch.cat([cum[:1], cum.diff(),
                        torch.tensor([n_val, num_papers - n_train - n_val])])
    years = torch.arange(_FIRST_YEAR, _TEST_YEAR + 1)
    years = torch.repeat_interleave(years, counts)
    return years[torch.randperm(num_papers, generator=gen)]


def mag_like(scale: float = 1.0, seed: int = 0, features: str = "paper",
             feature_noise: float = 6.0, undirected: bool = True
             ) -> HeteroData:
    """Synthetic heterogeneous stand-in for **ogbn-mag** (see the module
    docstring for the model and the statistics it matches).

    Args:
        scale: Multiplies every node and edge count (in ``(0, 1]``); the
            expected maximum degrees shrink with ``sqrt(scale)``.
        seed: Same seed, same tensors (the global RNG is not touched).
        features: ``'paper'`` (default): only papers have ``x``, the other
            types only ``num_nodes``, like PyG's ``OGB_MAG()``.
            ``'all'``: every node type gets a float32 ``x`` of width 128,
            as ``OGB_MAG(preprocess='metapath2vec')`` gives and as PyG's
            ``examples/hetero/to_hetero_mag.py`` needs; the non-paper
            features are pure N(0, 1) noise (no structural information,
            unlike real metapath2vec embeddings).
        feature_noise: Std of the noise on the paper features' unit-variance
            class centroids (large: the features alone are weak).
        undirected: Apply ``T.ToUndirected()`` (merge ``cites``, add the
            ``rev_*`` relations) as PyG's ogbn-mag examples do; ``False``
            gives the four directed relations of ``OGB_MAG()``.

    Returns:
        ``HeteroData`` with ``data['paper']``: ``x`` float32 [N, 128],
        ``y`` int64 [N] (349 classes), ``year`` int64 [N],
        ``train_mask``/``val_mask``/``test_mask`` (by year); every node
        type's ``num_nodes``; every relation's ``edge_index`` int64
        [2, E] (source type's ids first); ``data.name``, ``data.seed`` and
        ``data.synthetic = True``.

    Measured (seed 0, full scale, directed): 7,145,610 writes (max 1,577
    papers per author, 492 authors per paper), 5,416,257 cites (max
    in-degree 4,986, edge homophily 0.450), 7,505,047 has_topic (largest
    field 199,925 papers, median 35), 1,043,996 affiliated_with (largest
    institution 24,964 authors); 10.8M cites after ``ToUndirected``;
    ~10-30 s and 2.1 GiB peak RSS on 2 CPU cores (2.6 GiB with
    ``features='all'``).  At ``scale=0.01`` (0.07 s) a 2-layer
    ``to_hetero(GraphSAGE)`` reaches ~0.53-0.67 test accuracy where an MLP
    on the paper features reaches ~0.11-0.13 (seeds 0-2); with
    ``feature_noise=6`` even the Bayes-optimal classifier of the features
    alone reaches only ~0.27 (ogbn-mag's MLP: 0.27).
    """
    if features not in ("paper", "all"):
        raise ValueError(
            f"features must be 'paper' or 'all', got {features!r}")
    n = {t: _scaled(c, scale) for t, c in MAG_NUM_NODES.items()}
    m = {e: int(round(c * scale)) for e, c in MAG_NUM_EDGES.items()}
    cites = ("paper", "cites", "paper")
    npap = n["paper"]
    papers = power_law_graph(
        num_nodes=npap, avg_degree=m[cites] / npap,
        num_features=_NUM_FEATURES, num_classes=_NUM_CLASSES,
        max_degree=_scaled_max_degree(5_000, scale, npap), exponent=2.1,
        source_exponent=3.0,
        max_out_degree=_scaled_max_degree(500, scale, npap),
        homophily=0.45, feature_noise=feature_noise, class_skew=_CLASS_SKEW,
        split=(1.0, 0.0, 0.0), seed=seed)
    gen = torch.Generator(device="cpu")
    # A stream of its own, not a replay of power_law_graph's.
    gen.manual_seed((int(seed) * 0x9E3779B1 + 0x7F4A7C15) % (1 << 63))

    data = HeteroData()
    for node_type, count in n.items():
        data[node_type].num_nodes = count
    venue = {t: _labels(c, _NUM_CLASSES, _CLASS_SKEW, gen)
             for t, c in n.items() if t != "paper"}
    venue["paper"] = papers.y
    paper = data["paper"]
    paper.x, paper.y = papers.x, papers.y
    paper.year = _years(npap, gen)
    paper.train_mask = paper.year < _VAL_YEAR
    paper.val_mask = paper.year == _VAL_YEAR
    paper.test_mask = paper.year == _TEST_YEAR
    data[cites].edge_index = papers.edge_index
    del papers

    for (et, hub_side, hub_max, hub_exp, other_max, other_exp,
         p_same) in _BIPARTITE:
        hub, other = (et[0], et[2]) if hub_side == "src" else (et[2], et[0])
        hub_w = _degree_weights(n[hub], m[et], _scaled_max_degree(
            hub_max, scale, n[other]), hub_exp, gen)
        other_w = _degree_weights(n[other], m[et], _scaled_max_degree(
            other_max, scale, n[hub]), other_exp, gen)
        sampler = _BipartiteSampler(hub_w, venue[hub], other_w, venue[other],
                                    hub_side == "src", p_same, m[et], gen)
        data[et].edge_index = sampler.edges(m[et])
        del sampler, hub_w, other_w

    if features == "all":
        for node_type in ("author", "institution", "field_of_study"):
            data[node_type].x = torch.randn(n[node_type], _NUM_FEATURES,
                                            generator=gen)
    if undirected:
        data = T.ToUndirected()(data)
    data.name = _preset_name("mag_like", scale)
    data.seed = int(seed)
    data.synthetic = True
    return data

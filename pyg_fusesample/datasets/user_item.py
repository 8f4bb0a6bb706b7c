"""SYNTHETIC bipartite recommendation graph with MovieLens-100k's statistics.

What is generated: a :class:`~torch_geometric.data.HeteroData` with ``user``
and ``item`` nodes and ``('user', 'rates', 'item')`` edges carrying a
``rating`` in 1..5 and a ``time`` stamp, plus the reverse relation
``('item', 'rev_rates', 'user')`` exactly as ``T.ToUndirected()`` adds it.
It contains no real data (``data.synthetic = True``).

Statistics matched at ``scale=1`` (MovieLens-100k's): 943 users, 1,682
items, 100,000 distinct ratings (density 6.3%; average 106 per user, 59.5
per item), power-law user activity and item popularity (measured, seeds
0-2: users rate 14-20 .. 655-705 items, median ~77; items get 2 .. 587-615
ratings, median ~32; MovieLens-100k: 20 .. 737, median 65, and 1 .. 583,
median 27), the rating histogram 6.1% / 11.4% / 27.1% / 34.2% / 21.2% for
1..5 stars (exact, by rank), and time stamps within MovieLens-100k's
1997-09-20 .. 1998-04-22 (each user rates within an activity window of
their own).  Builds in ~0.3-0.7 s.

The model.  Users have latent tastes and items latent genres (``k = 8``
standard-normal dimensions); ``E`` distinct (user, item) pairs are drawn
without replacement (Gumbel top-k) with probability proportional to
``activity[u] * popularity[i] * exp(affinity * <taste[u], genre[i]> /
sqrt(k))``, where activity and popularity are power-law weights
(:mod:`.degrees`).  The rating ranks the same agreement plus a user bias,
an item quality and noise.  Features are noisy random linear views of the
latents (user ``x`` [U, 32], item ``x`` [I, 64], float32), so the link
structure is predictable from the features: a bilinear (dot-product) model
of the features ranks held-out edges above random pairs (AUC 0.78-0.79,
seeds 0-2, ``tests/test_hetero_datasets.py``), and above pairs with the
same item popularity (AUC ~0.75).
"""

from __future__ import annotations

import math

import torch
import torch_geometric.transforms as T
from torch_geometric.data import HeteroData

from .mag_like import _degree_weights
from .scaling import _preset_name, _scaled


ML100K_USERS, ML100K_ITEMS, ML100K_RATINGS = 943, 1_682, 100_000
# MovieLens-100k's number of 1..5 star ratings.
ML100K_RATING_COUNTS = (6_110, 11_370, 27_145, 34_174, 21_201)
_FIRST_TIME, _LAST_TIME = 874_724_710, 893_286_638  # unix seconds
_USER_FEATURES, _ITEM_FEATURES = 32, 64
_LATENT = 8
# Maximum expected degrees of the weights *before* drawing without
# replacement, which saturates the heaviest users and items: calibrated so
# that the realised maxima are near MovieLens-100k's 737 and 583.
_USER_WEIGHT_MAX, _ITEM_WEIGHT_MAX = 3_200, 3_500


def user_item_like(scale: float = 1.0, seed: int = 0, affinity: float = 2.0,
                   feature_noise: float = 1.0) -> HeteroData:
    """Synthetic MovieLens-100k-like user-item rating graph (see the module
    docstring for the model and the statistics it matches).

    Args:
        scale: Multiplies the user, item and rating counts (in ``(0, 1]``;
            at constant average degree, so tiny scales are dense: the
            rating count is capped at half of all user-item pairs).
        seed: Same seed, same tensors (the global RNG is not touched).
        affinity: How strongly taste-genre agreement drives who rates what
            (0: only activity and popularity).
        feature_noise: Std of the Gaussian noise on the features (the
            latent views have unit variance per feature).

    Returns:
        ``HeteroData`` with ``data['user'].x`` float32 [U, 32],
        ``data['item'].x`` float32 [I, 64], and on both
        ``('user', 'rates', 'item')`` and ``('item', 'rev_rates', 'user')``:
        ``edge_index`` int64 [2, E] (sorted by user, then item, on the
        forward relation), ``rating`` int64 [E] in 1..5, ``edge_attr``
        float32 [E, 1] (the same ratings, for edge-aware layers) and
        ``time`` int64 [E]; ``data.name``, ``data.seed`` and
        ``data.synthetic = True``.
    """
    nu = _scaled(ML100K_USERS, scale)
    ni = _scaled(ML100K_ITEMS, scale)
    m = min(int(round(ML100K_RATINGS * scale)), nu * ni // 2)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))

    taste = torch.randn(nu, _LATENT, generator=gen)
    genre = torch.randn(ni, _LATENT, generator=gen)
    agree = taste @ genre.T / math.sqrt(_LATENT)                  # [U, I]
    root = math.sqrt(scale)  # maximum degrees shrink as for the presets
    activity = _degree_weights(nu, m, _USER_WEIGHT_MAX * root, 2.0, gen)
    popularity = _degree_weights(ni, m, _ITEM_WEIGHT_MAX * root, 1.7, gen)
    logits = (agree * affinity + activity.log().float().unsqueeze(1)
              + popularity.log().float().unsqueeze(0))
    # Gumbel top-k: m distinct pairs, drawn one after another by exp(logit).
    u = torch.rand(nu * ni, generator=gen).clamp_(min=1e-12)
    keys = logits.view(-1) - u.log_().neg_().log_()
    flat = torch.sort(torch.topk(keys, m).indices).values
    del logits, keys, u
    row, col = flat // ni, flat % ni

    # Ratings: rank agreement + user bias + item quality + noise, then cut
    # the ranks into MovieLens-100k's star counts (scaled).
    score = (agree.view(-1)[flat]
             + 0.5 * torch.randn(nu, generator=gen)[row]
             + 0.5 * torch.randn(ni, generator=gen)[col]
             + torch.randn(m, generator=gen))
    share = torch.tensor(ML100K_RATING_COUNTS, dtype=torch.float64)
    cuts = (share.cumsum(0) / share.sum() * m).round().long()
    stars = torch.repeat_interleave(torch.arange(1, 6),
                                    torch.cat([cuts[:1], cuts.diff()]))
    rating = torch.empty(m, dtype=torch.long)
    rating[torch.argsort(score)] = stars

    # Time: uniform within each user's own activity window.
    window = torch.sort(torch.rand(nu, 2, dtype=torch.float64,
                                   generator=gen), dim=1).values
    start, length = window[:, 0], window[:, 1] - window[:, 0]
    frac = start[row] + length[row] * torch.rand(m, dtype=torch.float64,
                                                 generator=gen)
    time = (_FIRST_TIME + frac * (_LAST_TIME - _FIRST_TIME)).long()

    def view(latent, width):
        proj = torch.randn(_LATENT, width, generator=gen) / math.sqrt(_LATENT)
        noise = torch.randn(latent.size(0), width, generator=gen)
        return latent @ proj + feature_noise * noise

    data = HeteroData()
    data["user"].x = view(taste, _USER_FEATURES)
    data["item"].x = view(genre, _ITEM_FEATURES)
    data["user"].num_nodes, data["item"].num_nodes = nu, ni
    rates = data["user", "rates", "item"]
    rates.edge_index = torch.stack([row, col])
    rates.rating = rating
    rates.edge_attr = rating.to(torch.float32).view(-1, 1)
    rates.time = time
    data = T.ToUndirected()(data)
    data.name = _preset_name("user_item_like", scale)
    data.seed = int(seed)
    data.synthetic = True
    return data

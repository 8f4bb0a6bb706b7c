"""The adapter that runs PyG's loader tests (vendored here unchanged but for
one import line and one adapter import each, see their headers) against
pyg_fusesample's loaders.

The vendored files import their loaders from here:

* ``NeighborLoader`` is :class:`pyg_fusesample.FusedNeighborLoader` and
  ``LinkNeighborLoader`` :class:`pyg_fusesample.FusedLinkNeighborLoader`
  (subclasses that add nothing but PyG's class names).

and replace three of PyG's gates, which ask whether *PyG's* sampler
backends are installed; the loaders under test need neither backend:

* ``withPackage`` ignores ``'pyg_lib'``: PyG's tests require pyg-lib where
  PyG's own sampler needs it for the feature under test (num_sampled_nodes/
  edges, triplet negatives with disjoint subtrees, ...); FusedNeighborSampler
  provides those itself. Tests that really need pyg-lib (they call
  ``torch.ops.pyg`` directly) are skipped by ``conftest.py`` with their
  reason.
* ``WITH_PYG_LIB`` is ``True``: PyG's tests skip (return early from) int32
  ``edge_index`` cases without pyg-lib, whose sampler is the one taking
  int32; FusedNeighborSampler takes int32 and int64.
* ``onlyNeighborSampler`` is a no-op: it skips when neither pyg-lib nor
  torch-sparse is installed (e.g. on the GPU machine).
* ``WITH_TORCH_SPARSE`` is ``True``: PyG's tests return early from their
  ``subgraph_type='induced'`` cases without torch-sparse, whose sampler is
  PyG's one with induced subgraphs; FusedNeighborSampler cuts them with its
  own ops. (PyG's tests use this name for nothing else.)
"""
from pyg_fusesample import FusedLinkNeighborLoader, FusedNeighborLoader
from torch_geometric.testing import withPackage as _pyg_with_package



# Subclasses that only carry PyG's class names: PyG's tests assert
# str(loader) == 'NeighborLoader()', and the loaders print their class name
# the way PyG's do ('FusedNeighborLoader()').
class NeighborLoader(FusedNeighborLoader):
    pass


class LinkNeighborLoader(FusedLinkNeighborLoader):
    pass


WITH_PYG_LIB = True
WITH_TORCH_SPARSE = True
# PyG gates its weighted and edge-level temporal cases on pyg-lib versions
# that have them; FusedNeighborSampler samples both itself.
WITH_WEIGHTED_NEIGHBOR_SAMPLE = True
WITH_EDGE_TIME_NEIGHBOR_SAMPLE = True


def withPackage(*args: str):  # noqa: N802 (PyG's name)
    return _pyg_with_package(*[arg for arg in args if arg != 'pyg_lib'])


def onlyNeighborSampler(func):  # noqa: N802 (PyG's name)
    return func

"""The package's front: top-level names and the version pip reports."""
import importlib.metadata

import pyg_fusesample


def test_top_level_names():
    from pyg_fusesample import (AutoSpMMConv, CapturedStep,  # noqa: F401
                                FusedGraphSAGE, FusedLinkNeighborLoader,
                                FusedNeighborLoader,
                                FusedNeighborSampler, FusedSAGEConv)
    missing = [n for n in pyg_fusesample.__all__ if not hasattr(pyg_fusesample, n)]
    assert not missing
    assert pyg_fusesample.AutoSpMMConv is pyg_fusesample.nn.AutoSpMMConv
    assert pyg_fusesample.FusedNeighborLoader is pyg_fusesample.loader.FusedNeighborLoader


def test_version_is_the_installed_distributions():
    assert pyg_fusesample.__version__ == importlib.metadata.version('pyg_fusesample')
    assert pyg_fusesample.__version__[0].isdigit()

"""The package's front: top-level names and the version pip reports."""
import importlib.metadata

import pytest

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
    try:
        installed = importlib.metadata.version('pyg_fusesample')
    except importlib.metadata.PackageNotFoundError:
        pytest.skip('built in place, not installed (pip show has nothing)')
    assert pyg_fusesample.__version__ == installed
    assert pyg_fusesample.__version__[0].isdigit()

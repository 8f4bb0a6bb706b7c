"""Fixtures and out-of-scope skips for PyG's vendored loader tests.

Every case of PyG's test_neighbor_loader.py and test_link_neighbor_loader.py
runs against pyg_fusesample's loaders (see _adapter.py) except those listed
in OUT_OF_SCOPE below, which are skipped with the reason naming what they
need. A case that fails because our loader differs from PyG is not listed:
it fails.
"""
import importlib.util
from pathlib import Path
from typing import Callable

import pytest

from ._out_of_scope import always, param_is, skip_out_of_scope

PYG_LIB_OPS = ("needs pyg-lib: calls torch.ops.pyg.*neighbor_sample itself "
               "(PyG's own backends compared, no loader)")
VACUOUS_INT32_INDUCED = ("PyG's test body returns at once for int32 "
                         "edge_index with subgraph_type='induced' (nothing "
                         "would run)")


def int32_induced(params: dict) -> bool:
    return (param_is('dtype', 'torch.int32')(params)
            and param_is('subgraph_type', 'SubgraphType.induced')(params))


# test name -> [(condition on the case's parameters, reason)]
OUT_OF_SCOPE = {
    # test_neighbor_loader.py
    'test_homo_neighbor_loader_basic': [
        (int32_induced, VACUOUS_INT32_INDUCED)],
    'test_hetero_neighbor_loader_basic': [
        (int32_induced, VACUOUS_INT32_INDUCED)],
}

if importlib.util.find_spec('pyg_lib') is None:
    OUT_OF_SCOPE['test_pyg_lib_and_torch_sparse_homo_equality'] = [
        (always, PYG_LIB_OPS)]
    OUT_OF_SCOPE['test_pyg_lib_and_torch_sparse_hetero_equality'] = [
        (always, PYG_LIB_OPS)]


def pytest_configure(config):
    config.addinivalue_line('markers', 'dataset: PyG: a test loads a dataset')


def pytest_collection_modifyitems(config, items):
    # Only the files of this folder (the layer tests in nn/ have their own).
    skip_out_of_scope(items, Path(__file__).resolve().parent, OUT_OF_SCOPE)


# From PyG's test/conftest.py (same commit as the vendored tests; MIT
# License, Copyright (c) 2023 PyG Team <team@pyg.org>), reduced to the one
# dataset these tests load (KarateClub: built in, nothing downloaded).
def load_dataset(root: str, name: str, *args, **kwargs):
    r"""Returns a variety of datasets according to :obj:`name`."""
    if 'karate' in name.lower():
        from torch_geometric.datasets import KarateClub
        return KarateClub(*args, **kwargs)
    raise ValueError(f"Cannot load dataset with name '{name}'")


@pytest.fixture(scope='session')
def get_dataset() -> Callable:
    import functools
    yield functools.partial(load_dataset, 'memory://pyg_test_datasets')

import shutil
from pathlib import Path

import pytest
import torch

# Real Cora raw files: ../shared beside the repository (CI clones it so).
CORA_RAW = (Path(__file__).resolve().parents[2] / 'shared' / 'data' /
            'planetoid' / 'Cora' / 'raw')

CUDA = torch.cuda.is_available()


def pytest_configure(config):
    # A torch_scatter built without CUDA (as the GPU machine's wheel is) would
    # make PyG's own scatter -- the reference of the layer tests -- fail on
    # CUDA tensors; PyG then uses torch's native scatter_reduce instead.
    try:
        import torch_scatter  # noqa: F401
        import torch_geometric.typing
        if CUDA and torch.ops.torch_scatter.cuda_version() == -1:
            torch_geometric.typing.WITH_TORCH_SCATTER = False
    except (ImportError, AttributeError, RuntimeError):
        pass


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if 'cuda' in item.keywords and not CUDA:
            item.add_marker(skip)


@pytest.fixture
def one_thread():
    """One intra-op thread for the test: float sums then add in one order
    (torchrun's processes run with OMP_NUM_THREADS=1, and the references
    they are compared with must too), and on the 2 shared CI cores one
    thread is ~4x faster than two contending ones."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def devices():
    """CPU always; CUDA as a marked parameter (skipped without a GPU)."""
    return ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)]


@pytest.fixture(autouse=True, scope='session')
def _autotune_cache_in_tmp(tmp_path_factory):
    """Scheduler decisions made by tests (and by example scripts they start)
    go to a temporary file, never the user's ~/.cache."""
    import os
    key = 'FUSESAMPLE_AUTOTUNE_CACHE'
    old = os.environ.get(key)
    os.environ[key] = str(tmp_path_factory.mktemp('autotune') / 'autotune.json')
    yield
    if old is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = old


@pytest.fixture(scope='session')
def cora_root(tmp_path_factory):
    """A Planetoid root holding the real Cora raw files (nothing can be
    downloaded here); skips when ../shared is absent."""
    if not CORA_RAW.is_dir():
        pytest.skip(f'real Cora raw files not found at {CORA_RAW} (expected '
                    f'../shared/data/planetoid/Cora/raw beside the repo)')
    root = tmp_path_factory.mktemp('planetoid')
    shutil.copytree(CORA_RAW, root / 'Cora' / 'raw')
    return root


@pytest.fixture(scope='session')
def cora(cora_root):
    from torch_geometric.datasets import Planetoid
    return Planetoid(str(cora_root), 'Cora')[0]


def paper_author_graph(papers: int, authors: int, cites: int, writes: int,
                       seed: int = 0, features=(4, 3), labels: int = 0):
    """A small HeteroData: papers citing papers, authors writing papers and
    the reverse relation; random features (and paper labels when
    `labels` > 0)."""
    from torch_geometric.data import HeteroData
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data['paper'].x = torch.randn(papers, features[0], generator=g)
    if labels:
        data['paper'].y = torch.randint(labels, (papers, ), generator=g)
    data['author'].x = torch.randn(authors, features[1], generator=g)
    data['paper', 'cites', 'paper'].edge_index = torch.randint(
        papers, (2, cites), generator=g)
    data['author', 'writes', 'paper'].edge_index = torch.stack([
        torch.randint(authors, (writes, ), generator=g),
        torch.randint(papers, (writes, ), generator=g)])
    data['paper', 'rev_writes', 'author'].edge_index = \
        data['author', 'writes', 'paper'].edge_index.flip(0)
    return data

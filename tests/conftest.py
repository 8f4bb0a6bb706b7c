import shutil
from pathlib import Path

import pytest
import torch

# Real Cora raw files: ../shared beside the repository (CI clones it so).
CORA_RAW = (Path(__file__).resolve().parents[2] / 'shared' / 'data' /
            'planetoid' / 'Cora' / 'raw')

CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if 'cuda' in item.keywords and not CUDA:
            item.add_marker(skip)


def devices():
    """CPU always; CUDA as a marked parameter (skipped without a GPU)."""
    return ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)]


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

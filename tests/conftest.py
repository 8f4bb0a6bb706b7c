import pytest
import torch

CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if 'cuda' in item.keywords and not CUDA:
            item.add_marker(skip)


def devices():
    """CPU always; CUDA as a marked parameter (skipped without a GPU)."""
    return ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)]

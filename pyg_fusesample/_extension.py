"""Loads the compiled extension that registers the ``torch.ops.fusesample`` ops."""
import glob
import importlib
import os

import torch  # noqa: F401  (loads libc10/libtorch, which _C links against)

_HERE = os.path.dirname(os.path.abspath(__file__))

BUILD_HINT = (
    "Build it from the repository root with\n"
    "    pip install --no-build-isolation -e .\n"
    "(torch must be installed first; CUDA kernels are added when a GPU is "
    "visible or FORCE_CUDA=1 is set), or run `bash scripts/install.sh`.")


def load_extension():
    try:
        return importlib.import_module('pyg_fusesample._C')
    except ImportError as e:
        if glob.glob(os.path.join(_HERE, '_C*.so')):
            raise ImportError(
                f"pyg_fusesample's compiled extension failed to load "
                f"(built for another torch version?): {e}\nRebuild it. "
                f"{BUILD_HINT}") from e
        raise ImportError(f"pyg_fusesample's compiled extension "
                          f"(pyg_fusesample._C) is not built. "
                          f"{BUILD_HINT}") from e


_C = load_extension()


def cuda_kernels_built() -> bool:
    """True if the extension was built with its CUDA kernels."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(
        'fusesample::neighbor_sample', 'CUDA')

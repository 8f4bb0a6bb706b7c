"""Loads the compiled extension that registers the ``torch.ops.fusesample`` ops."""
import importlib

BUILD_HINT = (
    "pyg_fusesample's compiled extension (pyg_fusesample._C) is not built. "
    "Build it from the repository root with\n"
    "    pip install --no-build-isolation -e .\n"
    "(needs torch installed first; CUDA kernels are added when a GPU is "
    "visible or FORCE_CUDA=1 is set).")


def load_extension():
    try:
        return importlib.import_module('pyg_fusesample._C')
    except ImportError as e:
        raise ImportError(f"{BUILD_HINT}\n(original error: {e})") from e


_C = load_extension()


def cuda_kernels_built() -> bool:
    """True if the extension was built with its CUDA kernels."""
    import torch
    return torch._C._dispatch_has_kernel_for_dispatch_key(
        'fusesample::neighbor_sample', 'CUDA')

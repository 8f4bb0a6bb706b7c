"""Builds pyg_fusesample's C++/CUDA extension (``pyg_fusesample._C``).

The C++ CPU kernels are always built. CUDA sources (``kernels/**/cuda/*.cu``)
are added when PyTorch sees a GPU, or when ``FORCE_CUDA=1`` (e.g. building a
wheel on a machine without one); a CPU-only torch skips them cleanly.
Build in place for development with::

    pip install --no-build-isolation -e .
"""
import glob
import os
import sys

from setuptools import setup

import torch
from torch.utils.cpp_extension import (CUDA_HOME, BuildExtension,
                                       CppExtension, CUDAExtension)

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda() -> bool:
    if os.getenv('FORCE_CPU', '0') == '1':
        return False
    if torch.version.cuda is None or CUDA_HOME is None:
        return False
    return torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1'


def sources(pattern: str):
    return sorted(os.path.relpath(p, ROOT)
                  for p in glob.glob(os.path.join(ROOT, 'kernels', pattern),
                                     recursive=True))


def torch_declares(name: str, header: str) -> bool:
    """Whether torch's ``header`` declares ``name`` (an API newer than the
    oldest torch this builds against)."""
    from torch.utils.cpp_extension import include_paths
    for root in include_paths():
        path = os.path.join(root, header)
        if os.path.exists(path):
            with open(path) as f:
                return name in f.read()
    return False


def extension():
    cpp = sources('**/*.cpp')
    cxx_flags = ['-O3']  # the C++ standard is torch.utils.cpp_extension's choice
    link_flags = []
    # at::parallel_for is a header template: without OpenMP in *this* build
    # it silently runs on one thread.
    if sys.platform.startswith('linux') and torch.backends.openmp.is_available():
        cxx_flags.append('-fopenmp')
        link_flags.append('-fopenmp')
    if os.getenv('DEBUG', '0') == '1':
        cxx_flags = ['-O0', '-g'] + cxx_flags[1:]

    if want_cuda():
        nvcc_flags = ['-O3', '--expt-relaxed-constexpr',
                      '-lineinfo']
        macros = [('WITH_CUDA', None)]
        if torch_declares('clearCublasWorkspacesForStream',
                          'ATen/cuda/CUDAContextLight.h'):
            macros.append(('FUSESAMPLE_CLEAR_CUBLAS_FOR_STREAM', None))
        return CUDAExtension(
            'pyg_fusesample._C', cpp + sources('**/*.cu'),
            define_macros=macros,
            extra_compile_args={'cxx': cxx_flags, 'nvcc': nvcc_flags},
            extra_link_args=link_flags + ['-lcusparse'],
        )
    return CppExtension('pyg_fusesample._C', cpp,
                        extra_compile_args={'cxx': cxx_flags},
                        extra_link_args=link_flags)


setup(
    ext_modules=[extension()],
    cmdclass={'build_ext': BuildExtension.with_options(use_ninja=True)},
)

"""Builds pyg_fusesample's C++/CUDA extension (``pyg_fusesample._C``).

The C++ CPU kernels are always built. CUDA sources (``kernels/**/cuda/*.cu``)
are added when PyTorch sees a GPU, or when ``FORCE_CUDA=1`` (e.g. building a
wheel on a machine without one); a CPU-only torch skips them cleanly.
Build in place for development with::

    pip install --no-build-isolation -e .

Every kind of build (``build_ext --inplace``, ``pip install -e .``, ``pip
wheel .``) compiles into the same object folder, ``build/temp.<platform>``,
with ninja: a re-run with nothing changed compiles nothing, and a changed
file recompiles that file and what includes it. Build times and how they were
cut: docs/building.md.
"""
import functools
import glob
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup

import torch
from torch.utils.cpp_extension import (CUDA_HOME, BuildExtension,
                                       CppExtension, CUDAExtension)

ROOT = os.path.dirname(os.path.abspath(__file__))
# Compiled once per build and put in front of every .cpp file (see
# IncrementalBuildExtension.precompile_header).
PRECOMPILED = os.path.join(ROOT, 'kernels', 'common', 'precompiled.hpp')


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
    # -g0: Python's own CFLAGS carry -g, and debug information was a third of
    # the C++ compile time (DEBUG=1 keeps it). The C++ standard is
    # torch.utils.cpp_extension's choice.
    cxx_flags = ['-O3', '-g0']
    link_flags = []
    # at::parallel_for is a header template: without OpenMP in *this* build
    # it silently runs on one thread.
    if sys.platform.startswith('linux') and torch.backends.openmp.is_available():
        cxx_flags.append('-fopenmp')
        link_flags.append('-fopenmp')
    if os.getenv('DEBUG', '0') == '1':
        cxx_flags = ['-O0', '-g'] + cxx_flags[2:]
    # Every file includes ATen's per-operator headers (<ATen/ops/empty.h>),
    # not <ATen/ATen.h> or <torch/extension.h>, whose parse was most of a
    # small file's compile time; this makes an include of those an error.
    light = [('TORCH_ASSERT_ONLY_METHOD_OPERATORS', None)]

    if want_cuda():
        nvcc_flags = ['-O3', '--expt-relaxed-constexpr',
                      '-lineinfo']
        macros = light + [('WITH_CUDA', None)]
        if torch_declares('clearCublasWorkspacesForStream',
                          'ATen/cuda/CUDAContextLight.h'):
            macros.append(('FUSESAMPLE_CLEAR_CUBLAS_FOR_STREAM', None))
        return CUDAExtension(
            'pyg_fusesample._C', cpp + sources('**/*.cu'),
            define_macros=macros,
            extra_compile_args={'cxx': cxx_flags, 'nvcc': nvcc_flags},
            extra_link_args=link_flags + ['-lcusparse'],
        )
    return CppExtension('pyg_fusesample._C', cpp, define_macros=light,
                        extra_compile_args={'cxx': cxx_flags},
                        extra_link_args=link_flags)


class IncrementalBuildExtension(BuildExtension):
    """torch's ``BuildExtension`` (ninja) with one persistent object folder.

    pip's editable and wheel builds point ``build_temp`` at a new temporary
    folder, so every ``pip install -e .`` recompiled the whole extension;
    ninja skips what is up to date only if its objects and log persist.
    """

    def finalize_options(self):
        super().finalize_options()
        tag = f'{sysconfig.get_platform()}-{sys.implementation.cache_tag}'
        self.build_temp = os.path.join(ROOT, 'build', f'temp.{tag}')

    def build_extension(self, ext):
        if use_precompiled_header():
            # GCC's depfile of a file compiled with the precompiled header
            # lists none of the headers the header brought in (a schema file
            # that includes only torch/library.h depends on nothing but
            # itself), so ninja could not see a new torch or a changed
            # precompiled.hpp. Their stamp on every command line (the
            # header's too: its flags must match) rebuilds all when either
            # changes.
            ext.extra_compile_args['cxx'] = (
                ext.extra_compile_args['cxx'] + [f'-DFUSESAMPLE_PCH_STAMP={pch_stamp()}'])
            pch = self.precompile_header(ext)
            if pch is not None:
                # -include works wherever it stands on the command line;
                # GCC takes <pch>.gch beside it, or warns and reads the header.
                ext.extra_compile_args['cxx'] = (
                    ext.extra_compile_args['cxx'] + ['-include', pch, '-Winvalid-pch'])
        super().build_extension(ext)

    def precompile_header(self, ext):
        """Compiles kernels/common/precompiled.hpp into a GCC precompiled
        header with the very command line of the .cpp files (torch's ninja
        rule and flags: a header built with other flags is refused), in an
        object folder of its own; returns the path to ``-include``, or None
        where it failed (which is said)."""
        out_dir = os.path.join(self.build_temp, 'pch')
        include = os.path.join(out_dir, os.path.basename(PRECOMPILED))
        os.makedirs(out_dir, exist_ok=True)
        with open(PRECOMPILED) as f:
            text = f.read()
        # The copy beside the .gch is what GCC reads when it cannot use the
        # .gch; rewritten only when changed, so ninja sees it up to date.
        if not os.path.exists(include) or read(include) != text:
            with open(include, 'w') as f:
                f.write(text)
        if '.hpp' not in self.compiler.src_extensions:
            self.compiler.src_extensions = self.compiler.src_extensions + ['.hpp']
        macros = ext.define_macros[:] + [(u,) for u in ext.undef_macros]
        try:
            (obj,) = self.compiler.compile(
                [include], output_dir=out_dir, macros=macros,
                include_dirs=ext.include_dirs, debug=self.debug,
                extra_postargs=ext.extra_compile_args, depends=ext.depends)
            # GCC wrote the header's compiled form to obj (the object name
            # ninja tracks); GCC looks for it as <header>.gch.
            gch = include + '.gch'
            if os.path.exists(gch):
                os.remove(gch)
            try:
                os.link(obj, gch)
            except OSError:  # no hard links on this file system
                shutil.copyfile(obj, gch)
        except Exception as e:  # noqa: BLE001 -- any failure: build without it
            print(f'pyg_fusesample: WARNING: the precompiled header failed '
                  f'({e}); every .cpp file parses the torch headers itself, '
                  f'a slower build', file=sys.stderr)
            return None
        return include


def use_precompiled_header() -> bool:
    """GCC, unless FUSESAMPLE_PCH=0."""
    return os.getenv('FUSESAMPLE_PCH', '1') != '0' and compiler_is_gcc()


def pch_stamp() -> str:
    """What the precompiled header is made of: its text, this torch and the
    compiler (a hash, so the command lines stay short)."""
    import hashlib
    parts = [read(PRECOMPILED), torch.__version__, str(torch.version.git_version),
             compiler_version()]
    return hashlib.sha1('\0'.join(parts).encode()).hexdigest()[:16]


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def compiler_version() -> str:
    """The C++ compiler's ``--version`` text ('' if it cannot be run)."""
    from torch.utils.cpp_extension import get_cxx_compiler
    try:
        return subprocess.run([get_cxx_compiler(), '--version'], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ''


def compiler_is_gcc() -> bool:
    version = compiler_version()
    return 'clang' not in version and ('GCC' in version or 'Free Software' in version)


def report_compiler_cache():
    """Says whether compiles go through ccache/sccache. Newer torch releases'
    cpp_extension (2.13 has it) put either in front of the compilers when it
    is on the PATH; for an older torch, ``PYTORCH_NVCC`` and ``CXX`` can name
    it."""
    import torch.utils.cpp_extension as cpp_extension
    found = shutil.which('sccache') or shutil.which('ccache')
    if not found:
        return
    wraps = (hasattr(cpp_extension, '_wrap_compiler')
             and not os.getenv('TORCH_NO_COMPILER_WRAPPER'))
    print(f'pyg_fusesample: compiler cache {found}: '
          + ('used (torch wraps the compilers)' if wraps else
             'not used by this torch; set CXX="ccache c++" and '
             'PYTORCH_NVCC="ccache nvcc" to use it'))


def version():
    """The package version; with FUSESAMPLE_LOCAL_VERSION=auto (wheels for
    an index, as pyg-lib names its own) it carries the torch / CUDA pair the
    extension is compiled for: 0.2.0+pt213cpu, 0.2.0+pt211cu130."""
    scope = {}
    with open(os.path.join(ROOT, 'pyg_fusesample', '_version.py')) as f:
        exec(f.read(), scope)
    local = os.getenv('FUSESAMPLE_LOCAL_VERSION', '')
    if local == 'auto':
        major, minor = torch.__version__.split('+')[0].split('.')[:2]
        cuda = torch.version.cuda if want_cuda() else None
        local = f'pt{major}{minor}' + (f"cu{cuda.replace('.', '')}" if cuda else 'cpu')
    return scope['__version__'] + (f'+{local}' if local else '')


report_compiler_cache()
setup(
    version=version(),
    ext_modules=[extension()],
    cmdclass={'build_ext': IncrementalBuildExtension.with_options(use_ninja=True)},
)

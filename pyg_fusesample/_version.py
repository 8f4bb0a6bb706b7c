# The one place the version lives: setup.py reads it (a wheel may add a
# local torch/CUDA tag), the package exports it, and the autotune cache keys
# its entries with it.
__version__ = '0.2.0'

# The one place the version lives: setup.cfg reads it (attr:), the package
# exports it, and the autotune cache keys its entries with it.
__version__ = '0.2.0'

# PyG's own loader tests, vendored, run against pyg_fusesample's loaders.
# A package so that its conftest.py does not shadow tests/conftest.py (the
# other test modules import `devices` from `conftest`). See _adapter.py.
